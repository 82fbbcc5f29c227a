import { MessageChannel } from 'node:worker_threads';
import { createBus } from '@gitport/bus';
import { nodeEndpoint } from '@gitport/bus/node';
import { encodeData, encodeText, PacketReader, packetText } from '@gitport/pktline';
import { open } from '@gitport/transport';
import { describe, expect, it } from 'vitest';
import { encodeGitRequest, GIT_STREAM, host, parseGitRequest } from './host.js';
import { MemoryFs } from './memory-fs.js';
import {
  FsRepositoryRegistry,
  type HostedRepository,
  type RepositoryRegistry,
  staticRepositories,
} from './registry.js';
import { remote } from './remote.js';
import { HTTP_STREAM } from './wire.js';

const decoder = new TextDecoder();

/** A host serving `registry` on one bus, and a client bus linked to it; `close()` ends both. */
async function hostPair(registry: RepositoryRegistry, options: Parameters<typeof host>[2]) {
  const channel = new MessageChannel();
  const server = createBus({ id: 'server' });
  const client = createBus({ id: 'client' });
  await Promise.all([server.connect(nodeEndpoint(channel.port1)), client.connect(nodeEndpoint(channel.port2))]);
  const served = host(server, registry, options);
  return {
    client,
    close() {
      served.close();
      server.close();
      client.close();
      channel.port1.close();
      channel.port2.close();
    },
  };
}

describe('the git request line', () => {
  it('round-trips service, repository and extra parameters', () => {
    for (const request of [
      { service: 'git-upload-pack' as const, repository: 'notes', parameters: ['version=2'] },
      { service: 'git-receive-pack' as const, repository: 'a.b-c', parameters: [] },
    ]) {
      const reader = encodeGitRequest(request);
      const line = decoder.decode(reader.subarray(4));
      expect(parseGitRequest(line)).toEqual(request);
    }
    // git daemon's own shape parses too.
    expect(parseGitRequest('git-upload-pack /project.git\0host=myserver.com\0\0version=2\0')).toEqual({
      service: 'git-upload-pack',
      repository: 'project',
      parameters: ['version=2'],
    });
  });

  it('refuses other services and paths with a typed error', () => {
    for (const line of ['git-upload-archive /x.git\0', 'git-upload-pack x.git\0', 'rm -rf /', '']) {
      expect(() => parseGitRequest(line)).toThrow(expect.objectContaining({ code: 'HTTP_BAD_REQUEST' }));
    }
  });
});

describe('a host facing bad input', () => {
  const setup = async () => {
    const errors: string[] = [];
    let notify = () => {};
    const pair = await hostPair(new FsRepositoryRegistry(new MemoryFs(), '/r'), {
      onError: (error) => {
        errors.push((error as { code?: string }).code ?? 'none');
        notify();
      },
    });
    const nextError = () =>
      errors.length > 0
        ? Promise.resolve(errors.shift())
        : new Promise<string | undefined>((resolve) => {
            notify = () => resolve(errors.shift());
          });
    return { ...pair, nextError };
  };

  it('answers a stream whose first line is not a git request with ERR, and keeps serving', async () => {
    const t = await setup();
    try {
      const stream = await open(t.client, 'server', GIT_STREAM);
      await stream.write(encodeText('GET / HTTP/1.1'));
      await expect(new PacketReader(stream).read()).rejects.toMatchObject({
        code: 'PKTLINE_REMOTE_ERROR',
        message: expect.stringContaining('bad git request'),
      });
      expect(await t.nextError()).toBe('HTTP_BAD_REQUEST');

      const missing = await open(t.client, 'server', GIT_STREAM);
      await missing.write(encodeGitRequest({ service: 'git-upload-pack', repository: 'none', parameters: [] }));
      await missing.end();
      const reader = new PacketReader(missing);
      await expect(reader.read()).rejects.toMatchObject({ code: 'PKTLINE_REMOTE_ERROR' });
    } finally {
      t.close();
    }
  });

  it('answers a malformed or oversized HTTP head with 400 and reports a typed error', async () => {
    const t = await setup();
    try {
      const statusOf = async (stream: Awaited<ReturnType<typeof open>>) => {
        const head = await new PacketReader(stream).read();
        return (JSON.parse(packetText(head!)!) as { statusCode: number }).statusCode;
      };
      const bad = await open(t.client, 'server', HTTP_STREAM);
      await bad.write(encodeData('{not json'));
      await bad.end();
      expect(await statusOf(bad)).toBe(400);
      expect(await t.nextError()).toBe('HTTP_BAD_REQUEST');

      const huge = await open(t.client, 'server', HTTP_STREAM);
      await huge.write(encodeData(JSON.stringify({ method: 'GET', pad: 'x'.repeat(20_000) })));
      await huge.end();
      expect(await statusOf(huge)).toBe(400);
      expect(await t.nextError()).toBe('HTTP_BAD_REQUEST');

      const notFound = await open(t.client, 'server', HTTP_STREAM);
      await notFound.write(
        encodeData(JSON.stringify({ method: 'GET', repository: 'none', path: 'info/refs', query: '', headers: {} })),
      );
      await notFound.end();
      const reader = new PacketReader(notFound);
      const head = await reader.read();
      expect(JSON.parse(packetText(head!)!)).toMatchObject({ statusCode: 404 });
    } finally {
      t.close();
    }
  });
});

describe('a host whose own code fails', () => {
  const SECRET = '/srv/secret-root/objects/pack/tmp_pack_x';
  const setup = async (registry: RepositoryRegistry) => {
    const reported: unknown[] = [];
    const pair = await hostPair(registry, { control: false, onError: (error) => reported.push(error) });
    return { ...pair, reported };
  };
  const failingRegistry = (error: unknown): RepositoryRegistry => ({
    list: async () => [],
    open: async () => {
      throw error;
    },
    create: async () => {
      throw error;
    },
    delete: async () => false,
  });
  const bodyText = async (stream: Awaited<ReturnType<typeof open>>) => {
    const parts: Uint8Array[] = [];
    for await (const chunk of stream) parts.push(chunk);
    return parts.map((p) => decoder.decode(p)).join('');
  };

  it('tells a git or HTTP peer "internal error" for an unexpected exception, and reports the detail locally', async () => {
    const thrown = new TypeError(`EACCES: permission denied, open '${SECRET}'`);
    const t = await setup(failingRegistry(thrown));
    try {
      const git = await open(t.client, 'server', GIT_STREAM);
      await git.write(encodeGitRequest({ service: 'git-upload-pack', repository: 'notes', parameters: [] }));
      await git.end();
      const failure = await new PacketReader(git).read().catch((error: Error) => error);
      expect(failure).toMatchObject({ code: 'PKTLINE_REMOTE_ERROR' });
      expect((failure as Error).message).toContain('internal error');
      expect((failure as Error).message).not.toContain('secret');
      expect((failure as Error).message).not.toContain('EACCES');

      const http = await open(t.client, 'server', HTTP_STREAM);
      await http.write(
        encodeData(JSON.stringify({ method: 'GET', repository: 'notes', path: 'info/refs', query: '', headers: {} })),
      );
      await http.end();
      const reply = await bodyText(http);
      expect(reply).toContain('"statusCode":500');
      expect(reply).toContain('internal error');
      expect(reply).not.toContain('secret');
      expect(reply).not.toContain('at ');
      expect(t.reported).toEqual([thrown, thrown]);
    } finally {
      t.close();
    }
  });

  it('names the code of a typed local error but not its message', async () => {
    const thrown = Object.assign(new Error(`cannot read ${SECRET}`), { code: 'FS_READ_FAILED' });
    const t = await setup(failingRegistry(thrown));
    try {
      const git = await open(t.client, 'server', GIT_STREAM);
      await git.write(encodeGitRequest({ service: 'git-receive-pack', repository: 'notes', parameters: [] }));
      await git.end();
      const failure = (await new PacketReader(git).read().catch((error: Error) => error)) as Error;
      expect(failure.message).toContain('internal error (FS_READ_FAILED)');
      expect(failure.message).not.toContain('secret');
      expect(t.reported).toEqual([thrown]);
    } finally {
      t.close();
    }
  });

  it('keeps a store failure during a clone from the client, in band too', async () => {
    const registry = new FsRepositoryRegistry(new MemoryFs(), '/r');
    const origin = await registry.create('notes');
    const blob = await origin.objects.write('blob', new TextEncoder().encode('hello\n'));
    const id = Uint8Array.from(blob.match(/../g)!.map((h) => Number.parseInt(h, 16)));
    const tree = await origin.objects.write(
      'tree',
      new Uint8Array([...new TextEncoder().encode('100644 a.txt\0'), ...id]),
    );
    const commit = await origin.objects.write(
      'commit',
      new TextEncoder().encode(`tree ${tree}\nauthor t <t@x> 1 +0000\ncommitter t <t@x> 1 +0000\n\nfirst\n`),
    );
    await origin.refs.update([{ name: 'refs/heads/main', old: null, new: commit }]);
    const thrown = new Error(`EIO: i/o error, read '${SECRET}'`);
    const objects = origin.objects;
    // the walk reads the commit and finds the tree: reading the blob's data fails
    const failing: HostedRepository = {
      refs: origin.refs,
      objects: {
        has: (oid) => objects.has(oid),
        read: async (oid) => {
          if (oid === blob) throw thrown;
          return objects.read(oid);
        },
        write: (type, data) => objects.write(type, data),
      },
    };
    const t = await setup(staticRepositories({ notes: failing }));
    try {
      const failure = (await remote(t.client, 'server', 'notes')
        .clone(new MemoryFs(), '/c')
        .catch((error: Error) => error)) as Error & { code?: string };
      expect(failure.code).toBe('REMOTE_ERROR');
      expect(failure.message).toContain('internal error');
      expect(failure.message).not.toContain('secret');
      expect(failure.message).not.toContain('EIO');
      expect(t.reported).toContain(thrown);
    } finally {
      t.close();
    }
  });
});

describe('a clone over the bus', () => {
  it('creates the repository while the host answers; leaves an existing one alone; leaves nothing after a failure', async () => {
    const registry = new FsRepositoryRegistry(new MemoryFs(), '/r');
    const pair = await hostPair(registry, {});
    const { client } = pair;
    try {
      const origin = await registry.create('notes');
      const encoder = new TextEncoder();
      const blob = await origin.objects.write('blob', encoder.encode('hello\n'));
      const id = Uint8Array.from(blob.match(/../g)!.map((h) => Number.parseInt(h, 16)));
      const tree = await origin.objects.write('tree', new Uint8Array([...encoder.encode('100644 a.txt\0'), ...id]));
      const commit = await origin.objects.write(
        'commit',
        encoder.encode(`tree ${tree}\nauthor t <t@x> 1 +0000\ncommitter t <t@x> 1 +0000\n\nfirst\n`),
      );
      await origin.refs.update([
        { name: 'refs/heads/main', old: null, new: commit },
        { name: 'refs/tags/v1', old: null, new: commit },
      ]);
      const fs = new MemoryFs();
      const clone = await remote(client, 'server', 'notes').clone(fs, '/c');
      expect(await clone.refs.list()).toEqual(await origin.refs.list());
      expect(await clone.refs.resolve('HEAD')).toBe(commit);
      // the refs of a new clone go into one packed-refs file
      expect(decoder.decode((await fs.promises.readFile('/c/packed-refs')) as Uint8Array)).toContain(
        `${commit} refs/heads/main`,
      );
      await expect(remote(client, 'server', 'notes').clone(fs, '/c')).rejects.toMatchObject({ code: 'REPO_EXISTS' });
      expect(await clone.refs.list()).toEqual(await origin.refs.list());
      expect((await clone.objects.read(blob))?.type).toBe('blob');
      await expect(remote(client, 'server', 'missing').clone(fs, '/d')).rejects.toMatchObject({
        code: 'REPO_NOT_FOUND',
      });
      await expect(fs.promises.stat('/d')).rejects.toMatchObject({ code: 'ENOENT' });
    } finally {
      pair.close();
    }
  });
});
