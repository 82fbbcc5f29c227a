/**
 * What third-party packages expect of a module Web Worker, installed before they load (import
 * this module first):
 *   - lightning-fs pulls in fast-text-encoding, which looks for `window`, then `global`, then
 *     `this`; none exists at the top of a module worker: give it `global`;
 *   - isomorphic-git uses `Buffer` in browsers and asks its users to provide it.
 */
import { Buffer } from 'buffer';

const scope = globalThis as { global?: unknown; Buffer?: unknown };
scope.global ??= globalThis;
scope.Buffer ??= Buffer;
