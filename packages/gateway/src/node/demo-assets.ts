/**
 * The demo page's bundled scripts as the package build left them (`dist/demo/`, written by
 * `scripts/build-demo.mjs`), read once and kept.
 */
import { readFile } from 'node:fs/promises';
import type { DemoAsset } from '../demo-page.js';

/** From `src/node/` (sources run directly) and from `dist/node/` alike, `../../dist/demo/` is the build's output. */
const DEMO_DIR = new URL('../../dist/demo/', import.meta.url);

export function nodeDemoAssets(): (name: DemoAsset) => Promise<Uint8Array | undefined> {
  const cache = new Map<DemoAsset, Promise<Uint8Array | undefined>>();
  return (name) => {
    let loading = cache.get(name);
    if (loading === undefined) {
      loading = readFile(new URL(name, DEMO_DIR)).then(
        (buffer) => new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength),
        () => {
          // not built (yet): asked again next time
          cache.delete(name);
          return undefined;
        },
      );
      cache.set(name, loading);
    }
    return loading;
  };
}
