import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as pack from '@gitport/pack';
import { spawnTsNode } from '@gitport/test-helpers/ts-worker';
import { describe, expect, it } from 'vitest';
import * as library from './index.js';
import * as wire from './wire.js';

describe('gitport/wire', () => {
  it('names what the library and its packages name, with the same values', () => {
    expect(wire.ZERO_ID).toBe(pack.ZERO_ID);
    expect(wire.HTTP_STREAM).toBe(library.HTTP_STREAM);
    expect(wire.HTTP_STOP).toBe(library.HTTP_STOP);
    expect(wire.REF_UPDATE_EVENT).toBe(library.REF_UPDATE_EVENT);
    expect(wire.isRefUpdateEvent).toBe(library.isRefUpdateEvent);
  });

  it('loads no module but its own and the zero id of the pack package', async () => {
    // a process that imports gitport/wire alone (as the gateway's thread does), each module it loads noted
    const dir = await mkdtemp(join(tmpdir(), 'gitport-wire-'));
    try {
      const log = join(dir, 'loaded.txt');
      const hooks = join(dir, 'hooks.mjs');
      await writeFile(log, '');
      await writeFile(
        hooks,
        `import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  appendFileSync(${JSON.stringify(log)}, url + '\\n');
  return next(url, context);
}
`,
      );
      const entry = join(dir, 'entry.mjs');
      await writeFile(
        entry,
        `import { register } from 'node:module';
register(${JSON.stringify(pathToFileURL(hooks).href)});
const wire = await import(${JSON.stringify(new URL('./wire.ts', import.meta.url).href)});
if (wire.ZERO_ID !== '0'.repeat(40)) process.exit(2);
`,
      );
      const child = spawnTsNode(entry, [], { stdio: 'inherit' });
      expect(await new Promise((resolve) => child.on('exit', resolve))).toBe(0);
      const loaded = (await readFile(log, 'utf8'))
        .split('\n')
        .filter((url) => url.includes('/packages/'))
        .map((url) => url.slice(url.indexOf('/packages/')));
      expect(loaded).toEqual(['/packages/gitport/src/wire.ts', '/packages/pack/src/zero-id.ts']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('tells a ref-update event from other payloads', () => {
    const event = { repo: 'r', ref: 'refs/heads/main', old: wire.ZERO_ID, new: 'a'.repeat(40) };
    expect(wire.isRefUpdateEvent(event)).toBe(true);
    expect(wire.isRefUpdateEvent({ ...event, new: 1 })).toBe(false);
    expect(wire.isRefUpdateEvent({ repo: 'r', ref: 'x', old: 'y' })).toBe(false);
    expect(wire.isRefUpdateEvent(null)).toBe(false);
    expect(wire.isRefUpdateEvent('ref-update')).toBe(false);
  });
});
