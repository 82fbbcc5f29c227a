/**
 * A gitport worker thread for the Node tests: it joins the bus over the MessagePorts it is given
 * (`workerData.ports`), then obeys commands from the test thread (`{ id, command, args }` on
 * parentPort, answered `{ id, result }` or `{ id, error: { code, message } }`):
 *
 *   host { root }                        host every bare repository under root (FsRepositoryRegistry)
 *   clone { peer, name, dir }            clone a non-bare repository into dir
 *   commit { dir, path, content, message, ref? }  commit a file with isomorphic-git
 *   push { dir, peer, name, ref }        push ref to the host (resolves the report, refused or not)
 *   fetch { dir, peer, name }            fetch from the host
 *   lsRefs { peer, name }                list the host's refs
 *   fsCallsDone { path }                 whether nodeFs() here has written `path` by the time its
 *                                        writeFile returns (synchronous calls: true)
 *   rawPushHalf { peer, name, ref, old, new, pack }  start a receive-pack session, send half the pack,
 *                                        post `{ event: 'stalled' }`, then wait for the host's answer
 *                                        (an error's code when the stream fails)
 *
 * The host reports stream failures as `{ event: 'host-error', code, message }`, and ref updates
 * as `{ event: 'ref-update', ... }`.
 */
import * as nodeFsModule from 'node:fs';
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { createBus } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';
import { encodeText, FLUSH, PacketReader } from '@gitport/pktline';
import { open } from '@gitport/transport';
import { encodeGitRequest, FsRepositoryRegistry, GIT_STREAM, host, openRepository, remote } from 'gitport';
import { nodeFs } from 'gitport/node';
import git from 'isomorphic-git';

const { ports, id } = workerData as { ports: MessagePort[]; id: string };
const bus = createBus({ id });
const ready = Promise.all(ports.map((port) => bus.connect(nodeEndpoint(port))));
const fs = nodeFs();

type Handler = (args: Record<string, unknown>) => Promise<unknown>;

const post = (message: unknown) => parentPort!.postMessage(message);

const commands: Record<string, Handler> = {
  async host(args) {
    const registry = new FsRepositoryRegistry(fs, args.root as string);
    const h = host(bus, registry, {
      onError: (error) => {
        const e = error as { code?: string; message?: string };
        post({ event: 'host-error', code: e.code ?? 'UNKNOWN', message: e.message ?? String(error) });
      },
    });
    h.onRefUpdate((event) => post({ event: 'ref-update', ...event }));
    return true;
  },
  async clone(args) {
    const repo = await remote(bus, args.peer as string, args.name as string).clone(fs, args.dir as string, {
      bare: false,
    });
    return repo.refs.resolve('HEAD');
  },
  async commit(args) {
    const dir = args.dir as string;
    await nodeFsModule.promises.writeFile(`${dir}/${args.path as string}`, args.content as string);
    await git.add({ fs: nodeFsModule, dir, filepath: args.path as string });
    return git.commit({
      fs: nodeFsModule,
      dir,
      message: args.message as string,
      author: { name: 'worker', email: 'worker@gitport.invalid', timestamp: 1_700_000_000, timezoneOffset: 0 },
    });
  },
  async push(args) {
    const repo = await openRepository(fs, args.dir as string);
    const ref = args.ref as string;
    return remote(bus, args.peer as string, args.name as string).push(repo, {
      refspecs: [`${ref}:${ref}`],
      report: true,
    });
  },
  async fetch(args) {
    const repo = await openRepository(fs, args.dir as string);
    return remote(bus, args.peer as string, args.name as string).fetch(repo);
  },
  async lsRefs(args) {
    return remote(bus, args.peer as string, args.name as string).lsRefs();
  },
  async fsCallsDone(args) {
    const path = args.path as string;
    const writing = nodeFs().promises.writeFile(path, 'x');
    const done = nodeFsModule.existsSync(path);
    await writing;
    return done;
  },
  async rawPushHalf(args) {
    const stream = await open(bus, args.peer as string, GIT_STREAM);
    await stream.write(
      encodeGitRequest({ service: 'git-receive-pack', repository: args.name as string, parameters: [] }),
    );
    // Read the advertisement up to its flush, then send the command and half of the pack.
    const reader = new PacketReader(stream);
    for (;;) {
      const packet = await reader.read();
      if (!packet) throw new Error('host hung up during the advertisement');
      if (packet.kind === 'flush') break;
    }
    await stream.write(encodeText(`${args.old as string} ${args.new as string} ${args.ref as string}\0report-status`));
    await stream.write(FLUSH);
    const pack = args.pack as Uint8Array;
    await stream.write(pack.subarray(0, pack.byteLength >> 1));
    post({ event: 'stalled' });
    try {
      while (await reader.read()) {
        // the host answers only once the pack is complete: it never is
      }
      return 'ended';
    } catch (error) {
      return { failed: (error as { code?: string }).code ?? 'UNKNOWN' };
    }
  },
};

parentPort!.on('message', async (message: { id: number; command: string; args: Record<string, unknown> }) => {
  try {
    await ready;
    const handler = commands[message.command];
    if (!handler) throw new Error(`unknown command ${message.command}`);
    post({ id: message.id, result: await handler(message.args) });
  } catch (error) {
    const e = error as { code?: string; message?: string };
    post({ id: message.id, error: { code: e.code ?? 'UNKNOWN', message: e.message ?? String(error) } });
  }
});
post({ event: 'started' });
