/**
 * The worker that clones: into memory and into OPFS, each time with a working tree, commits a
 * file and pushes it back; reads the host's refs over the control API and follows its ref
 * updates with a plain function.
 */
import { createBus, messagePortEndpoint } from '@gitport/bus';
import { commit, control, type FsLike, MemoryFs, OpfsFs, type RefUpdateEvent, remote } from 'gitport';

const author = { name: 'Client', email: 'client@example.com', timestamp: 1_700_000_100 };

self.onmessage = async (event: MessageEvent<{ port: MessagePort }>) => {
  try {
    const bus = createBus({ id: 'client' });
    await bus.connect(messagePortEndpoint(event.data.port));
    const api = control(bus, 'host');
    const updates: RefUpdateEvent[] = [];
    await api.subscribe((update) => updates.push(update), 'notes');

    const origin = remote(bus, 'host', 'notes');
    const clones: Record<string, { readme: string; pushed: string }> = {};
    const filesystems: [string, FsLike][] = [
      ['memory', new MemoryFs()],
      ['opfs', new OpfsFs()],
    ];
    for (const [name, fs] of filesystems) {
      const dir = `/clone-${name}`;
      const repo = await origin.clone(fs, dir, { bare: false });
      const readme = new TextDecoder().decode((await fs.promises.readFile(`${dir}/README.md`)) as Uint8Array);
      const made = await commit(repo, { message: `from ${name}`, author, files: { [`${name}.txt`]: `${name}\n` } });
      await origin.push(repo, { refspecs: ['main:main'] });
      clones[name] = { readme, pushed: made.oid };
    }
    const refs = await api.refs('notes');
    while (updates.length < filesystems.length) await new Promise((resolve) => setTimeout(resolve, 10));
    postMessage({ ok: true, clones, refs: refs.refs, updates });
  } catch (error) {
    postMessage({ ok: false, error: String(error), code: (error as { code?: string }).code });
  }
};
