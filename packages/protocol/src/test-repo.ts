/**
 * Test support: small repositories built object by object in memory, and raw exchanges over a
 * connection pair.
 */
import { MemoryObjectStore, type ObjectId, packObjects } from '@gitport/pack';
import { type Connection, concatBytes, type Repository } from './connection.js';
import { MemoryRefStore, type RefStore } from './ref-store.js';

const encoder = new TextEncoder();

export interface TestRepo extends Repository {
  objects: MemoryObjectStore;
  refs: MemoryRefStore;
}

export function emptyRepo(): TestRepo {
  return { objects: new MemoryObjectStore(), refs: new MemoryRefStore() };
}

/** A ref store over `store` that counts the listings, reads and resolutions asked of it. */
export function countingRefs(store: RefStore): {
  refs: RefStore;
  calls: { list: number; read: number; resolve: number };
} {
  const calls = { list: 0, read: 0, resolve: 0 };
  const refs: RefStore = {
    list: (prefix) => {
      calls.list++;
      return store.list(prefix);
    },
    read: (name) => {
      calls.read++;
      return store.read(name);
    },
    resolve: (name) => {
      calls.resolve++;
      return store.resolve(name);
    },
    update: (updates, options) => store.update(updates, options),
    setSymbolic: (name, target) => store.setSymbolic(name, target),
  };
  return { refs, calls };
}

let clock = 1_700_000_000;

/** Writes a commit with one file `name` holding `content`; returns its id. */
export async function commit(
  repo: { objects: MemoryObjectStore },
  parents: readonly ObjectId[],
  content: string,
  name = 'file.txt',
): Promise<ObjectId> {
  const blob = await repo.objects.write('blob', encoder.encode(content));
  const hex = blob.match(/../g)!.map((h) => Number.parseInt(h, 16));
  const tree = await repo.objects.write(
    'tree',
    concatBytes([encoder.encode(`100644 ${name}\0`), Uint8Array.from(hex)]),
  );
  clock += 60;
  const text = `tree ${tree}\n${parents.map((p) => `parent ${p}\n`).join('')}author t <t@x> ${clock} +0000\ncommitter t <t@x> ${clock} +0000\n\n${content}\n`;
  return repo.objects.write('commit', encoder.encode(text));
}

/** A chain of `n` commits on top of `parent`; returns the ids oldest first. */
export async function chain(
  repo: { objects: MemoryObjectStore },
  n: number,
  parent?: ObjectId,
  label = 'c',
): Promise<ObjectId[]> {
  const out: ObjectId[] = [];
  let p = parent;
  for (let i = 0; i < n; i++) {
    p = await commit(repo, p ? [p] : [], `${label} ${i}`);
    out.push(p);
  }
  return out;
}

export async function annotatedTag(
  repo: { objects: MemoryObjectStore },
  target: ObjectId,
  name: string,
): Promise<ObjectId> {
  return repo.objects.write(
    'tag',
    encoder.encode(`object ${target}\ntype commit\ntag ${name}\ntagger t <t@x> 1700000000 +0000\n\n${name}\n`),
  );
}

/** The bytes of a pack holding `oids` from `store`. */
export async function packOf(store: MemoryObjectStore, oids: readonly ObjectId[]): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const chunk of packObjects(store, oids)) parts.push(chunk);
  return concatBytes(parts);
}

/** Everything a connection receives until it ends. */
export async function readAll(conn: Connection): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const chunk of conn.input) parts.push(chunk);
  return concatBytes(parts);
}

export const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
