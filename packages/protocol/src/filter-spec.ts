/**
 * The clients' check of a filter-spec, apart from fetch-client.ts so that code which checks
 * one before it loads the client (gitport's partial clone) does not load the client with it.
 */
import { isPackError } from '@gitport/pack/internal/errors';
import { parseObjectFilter } from '@gitport/pack/internal/object-filter';
import { ProtocolError } from './errors.js';

/** A filter-spec checked with the pack package's parser; a bad one is `PROTOCOL_BAD_FILTER`. */
export function checkFilterSpec(spec: string): string {
  try {
    parseObjectFilter(spec);
  } catch (error) {
    if (isPackError(error)) throw new ProtocolError('PROTOCOL_BAD_FILTER', error.message, { cause: error });
    throw error;
  }
  return spec;
}
