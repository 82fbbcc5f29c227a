/**
 * Refspecs (git-fetch(1) "<refspec>"): `[+]<src>[:<dst>]`, where `<src>` and `<dst>` may each
 * hold one `*` that matches any run of characters (the same run on both sides). An empty `<src>`
 * (`:<dst>`) in a push refspec deletes `<dst>`.
 */
import { ProtocolError } from './errors.js';

export interface Refspec {
  force: boolean;
  src: string;
  /** `undefined`: fetch without storing. */
  dst?: string;
}

export function parseRefspec(text: string): Refspec {
  const force = text.startsWith('+');
  const body = force ? text.slice(1) : text;
  const colon = body.indexOf(':');
  const src = colon < 0 ? body : body.slice(0, colon);
  const dst = colon < 0 ? undefined : body.slice(colon + 1);
  const stars = (s: string) => s.split('*').length - 1;
  if (stars(src) > 1 || (dst !== undefined && stars(dst) !== stars(src) && src !== '')) {
    throw new ProtocolError('PROTOCOL_BAD_REFSPEC', `invalid refspec ${JSON.stringify(text)}`);
  }
  return dst === undefined ? { force, src } : { force, src, dst };
}

/** Maps a ref name through a refspec; `undefined` when it does not match. */
export function matchRefspec(spec: Refspec, name: string): { dst?: string } | undefined {
  const star = spec.src.indexOf('*');
  if (star < 0) {
    if (name !== spec.src) return undefined;
    return spec.dst === undefined ? {} : { dst: spec.dst };
  }
  const prefix = spec.src.slice(0, star);
  const suffix = spec.src.slice(star + 1);
  if (!name.startsWith(prefix) || !name.endsWith(suffix) || name.length < prefix.length + suffix.length)
    return undefined;
  const middle = name.slice(prefix.length, name.length - suffix.length);
  return spec.dst === undefined ? {} : { dst: spec.dst.replace('*', middle) };
}

/** The `ref-prefix` a v2 ls-refs request needs for a refspec source. */
export function refspecPrefix(spec: Refspec): string {
  const star = spec.src.indexOf('*');
  return star < 0 ? spec.src : spec.src.slice(0, star);
}
