/**
 * Creates `demo.git`, a small bare repository in git's standard layout (gitrepository-layout),
 * written object by object as loose objects (gitformat-loose: zlib("<type> <size>\0<content>"),
 * named by the SHA-1 of the uncompressed bytes), so real git reads it and no git binary is needed.
 *
 *   tree   = *( mode SP name NUL 20-byte-oid )    entries sorted by name
 *   commit = "tree" SP hex LF *("parent" SP hex LF) "author" SP ident LF "committer" SP ident LF LF message
 */
import { createHash } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';

const encoder = new TextEncoder();

interface Written {
  oid: string;
  raw: Uint8Array;
}

function object(type: string, content: Uint8Array): Written & { compressed: Uint8Array } {
  const header = encoder.encode(`${type} ${content.byteLength}\0`);
  const raw = new Uint8Array(header.byteLength + content.byteLength);
  raw.set(header, 0);
  raw.set(content, header.byteLength);
  const oid = createHash('sha1').update(raw).digest('hex');
  return { oid, raw, compressed: deflateSync(raw) };
}

function hexToBytes(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/** Writes `<root>/<name>.git` with a short history on `main` and a tag `v1.0`; returns its path. */
export async function createDemoRepository(root: string, name = 'demo'): Promise<string> {
  const final = join(root, `${name}.git`);
  const dir = join(root, `.${name}.git.tmp-${process.pid}`);
  await rm(dir, { recursive: true, force: true });
  for (const sub of ['objects/info', 'objects/pack', 'refs/heads', 'refs/tags', 'info', 'hooks']) {
    await mkdir(join(dir, sub), { recursive: true });
  }
  const store = async (type: string, content: Uint8Array): Promise<string> => {
    const o = object(type, content);
    const folder = join(dir, 'objects', o.oid.slice(0, 2));
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, o.oid.slice(2)), o.compressed, { mode: 0o444 });
    return o.oid;
  };
  const tree = async (entries: { mode: string; name: string; oid: string }[]): Promise<string> => {
    const sorted = [...entries].sort((a, b) => {
      const ka = a.mode === '40000' ? `${a.name}/` : a.name;
      const kb = b.mode === '40000' ? `${b.name}/` : b.name;
      return ka < kb ? -1 : ka > kb ? 1 : 0;
    });
    const parts: Uint8Array[] = [];
    for (const e of sorted) {
      parts.push(encoder.encode(`${e.mode} ${e.name}\0`), hexToBytes(e.oid));
    }
    const size = parts.reduce((n, p) => n + p.byteLength, 0);
    const out = new Uint8Array(size);
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.byteLength;
    }
    return store('tree', out);
  };
  const ident = (t: number) => `gitport demo <demo@gitport.invalid> ${t} +0000`;
  const commit = (treeOid: string, parents: string[], time: number, message: string) =>
    store(
      'commit',
      encoder.encode(
        `tree ${treeOid}\n${parents.map((p) => `parent ${p}\n`).join('')}author ${ident(time)}\ncommitter ${ident(time)}\n\n${message}\n`,
      ),
    );

  const readme1 = await store('blob', encoder.encode('# demo\n\nA repository served by gitport.\n'));
  const t1 = await tree([{ mode: '100644', name: 'README.md', oid: readme1 }]);
  const c1 = await commit(t1, [], 1_700_000_000, 'Initial commit');

  const hello = await store('blob', encoder.encode('export const hello = (name) => "hello, " + name;\n'));
  const src = await tree([{ mode: '100644', name: 'hello.js', oid: hello }]);
  const t2 = await tree([
    { mode: '100644', name: 'README.md', oid: readme1 },
    { mode: '40000', name: 'src', oid: src },
  ]);
  const c2 = await commit(t2, [c1], 1_700_000_600, 'Add a greeting');

  const readme3 = await store(
    'blob',
    encoder.encode(
      '# demo\n\nA repository served by gitport.\n\n    git clone http://127.0.0.1:8080/demo.git\n    curl -N http://127.0.0.1:8080/demo.git/events\n',
    ),
  );
  const t3 = await tree([
    { mode: '100644', name: 'README.md', oid: readme3 },
    { mode: '40000', name: 'src', oid: src },
  ]);
  const c3 = await commit(t3, [c2], 1_700_001_200, 'Explain how to clone and follow events');

  await writeFile(join(dir, 'refs/heads/main'), `${c3}\n`);
  await writeFile(join(dir, 'refs/tags/v1.0'), `${c2}\n`);
  await writeFile(join(dir, 'HEAD'), 'ref: refs/heads/main\n');
  await writeFile(join(dir, 'config'), '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n');
  await writeFile(join(dir, 'description'), 'gitport demo repository\n');
  await writeFile(join(dir, 'info/exclude'), '');
  await rename(dir, final);
  return final;
}
