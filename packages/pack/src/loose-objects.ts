/**
 * Loose objects of an objects directory (gitrepository-layout): `objects/xx/yyyy…`, each
 * zlib("<type> <size>\0<data>"), written to a temporary file and renamed into place.
 */
import { deflateAsync, inflateAll } from '#zlib';
import { PackError } from './errors.js';
import { type GitObject, type ObjectId, type ObjectType, objectHeader } from './object.js';
import { isEnoent, type StoreFiles } from './store-files.js';

/** The largest loose object read (inflated, header included). */
const MAX_LOOSE_BYTES = 2 ** 31;

export class LooseObjects {
  readonly #files: StoreFiles;
  readonly #dir: string;

  /** `dir`: the objects directory. */
  constructor(files: StoreFiles, dir: string) {
    this.#files = files;
    this.#dir = dir;
  }

  #path(oid: ObjectId): string {
    return `${this.#dir}/${oid.slice(0, 2)}/${oid.slice(2)}`;
  }

  async has(oid: ObjectId): Promise<boolean> {
    try {
      await this.#files.fs.stat(this.#path(oid));
      return true;
    } catch (error) {
      if (!isEnoent(error)) throw new PackError('STORE_IO', `cannot stat object ${oid}`, { cause: error });
      return false;
    }
  }

  async read(oid: ObjectId): Promise<GitObject | undefined> {
    let file: Uint8Array;
    try {
      file = await this.#files.readBytes(this.#path(oid));
    } catch (error) {
      if (isEnoent(error)) return undefined;
      throw new PackError('STORE_IO', `cannot read object ${oid}`, { cause: error });
    }
    const raw = inflateAll(file, MAX_LOOSE_BYTES);
    const nul = raw.indexOf(0);
    if (nul < 0) throw new PackError('OBJECT_CORRUPT', `loose object ${oid} has no header`);
    const header = new TextDecoder().decode(raw.subarray(0, nul));
    const m = /^(commit|tree|blob|tag) (\d+)$/.exec(header);
    if (!m || Number(m[2]) !== raw.length - nul - 1) {
      throw new PackError('OBJECT_CORRUPT', `loose object ${oid} has a bad header`);
    }
    return { type: m[1] as ObjectType, data: raw.subarray(nul + 1) };
  }

  /** Writes the object `oid` (hashed by the caller from `type` and `data`). */
  async write(oid: ObjectId, type: ObjectType, data: Uint8Array): Promise<void> {
    const header = objectHeader(type, data.length);
    const raw = new Uint8Array(header.length + data.length);
    raw.set(header);
    raw.set(data, header.length);
    const dir = `${this.#dir}/${oid.slice(0, 2)}`;
    await this.#files.mkdir(dir);
    await this.#files.atomicWrite(this.#path(oid), await deflateAsync(raw, 1), dir);
  }
}
