/**
 * OpfsFs writing files in a dedicated worker, where it writes large, scratch and new ones in place
 * through a sync access handle: a file rewritten shorter, longer and small reads back exactly; a
 * small file is written new and rewritten shorter; a scratch file is renamed after its write, and
 * one another context removed meanwhile is missing; a file another sync access handle holds falls
 * back to a writable, which the browser refuses as it always did.
 * Answers what it found.
 */
import { OpfsFs } from 'gitport';

const pattern = (length: number, seed: number) => {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = (i * 31 + seed) & 0xff;
  return bytes;
};

const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

self.onmessage = async (event: MessageEvent<{ dir: string }>) => {
  try {
    const { dir } = event.data;
    const fs = new OpfsFs();
    await fs.promises.mkdir(dir);
    const path = `${dir}/pack`;
    const checks: Record<string, boolean> = {};
    for (const [name, data] of [
      ['large', pattern(1024 * 1024 + 3, 1)],
      ['shorter', pattern(300 * 1024, 2)],
      ['longer', pattern(2 * 1024 * 1024, 3)],
      ['small', pattern(10, 4)],
    ] as const) {
      await fs.promises.writeFile(path, data);
      checks[name] = same((await fs.promises.readFile(path)) as Uint8Array, data);
    }
    // scratch names (temporary files, locks) are written in place whatever their size
    for (const [name, data] of [
      ['lock', pattern(100, 6)],
      ['lock-shorter', pattern(10, 7)],
      ['tmp', pattern(5000, 8)],
    ] as const) {
      const scratch = name === 'tmp' ? `${dir}/tmp_obj_1` : `${dir}/packed-refs.lock`;
      await fs.promises.writeFile(scratch, data);
      checks[name] = same((await fs.promises.readFile(scratch)) as Uint8Array, data);
    }
    // a small file: a new one is written in place, one that holds bytes replaced whole
    const config = `${dir}/config`;
    await fs.promises.writeFile(config, '[core]\n\tbare = true\n');
    checks['new-small'] = (await fs.promises.readFile(config, 'utf8')) === '[core]\n\tbare = true\n';
    await fs.promises.writeFile(config, '[core]\n');
    checks['small-rewritten'] = (await fs.promises.readFile(config, 'utf8')) === '[core]\n';
    // a scratch file renamed after its write (through the handle kept from the write)
    const moved = pattern(70_000, 9);
    await fs.promises.writeFile(`${dir}/tmp_obj_2`, moved);
    await fs.promises.rename!(`${dir}/tmp_obj_2`, `${dir}/pack-2.pack`);
    checks.renamed =
      same((await fs.promises.readFile(`${dir}/pack-2.pack`)) as Uint8Array, moved) &&
      !(await fs.promises.readdir(dir)).includes('tmp_obj_2');
    // removed by another context between its write and its rename: missing, not renamed
    await fs.promises.writeFile(`${dir}/tmp_obj_3`, moved);
    await new OpfsFs().promises.unlink(`${dir}/tmp_obj_3`);
    let gone: unknown;
    try {
      await fs.promises.rename!(`${dir}/tmp_obj_3`, `${dir}/pack-3.pack`);
      gone = 'renamed';
    } catch (error) {
      gone = (error as { code?: string }).code;
    }
    checks['renamed-gone'] = gone === 'ENOENT' && !(await fs.promises.readdir(dir)).includes('pack-3.pack');
    // another handle holds the file: the write falls back to a writable, refused while it is held
    const root = await navigator.storage.getDirectory();
    const parent = await root.getDirectoryHandle(dir.slice(1));
    const held = await (
      (await parent.getFileHandle('held', { create: true })) as unknown as {
        createSyncAccessHandle(): Promise<{ close(): void }>;
      }
    ).createSyncAccessHandle();
    const blocked = pattern(512 * 1024, 5);
    let heldOutcome: string;
    try {
      await fs.promises.writeFile(`${dir}/held`, blocked);
      heldOutcome = 'written';
    } catch (error) {
      heldOutcome = (error as { name?: string }).name ?? String(error);
    } finally {
      held.close();
    }
    postMessage({
      ok: true,
      checks,
      heldOutcome,
      syncHandles: 'createSyncAccessHandle' in FileSystemFileHandle.prototype,
    });
  } catch (error) {
    postMessage({ ok: false, error: String(error) });
  }
};
