/**
 * `@gitport/pack/import`: what storing an incoming pack in a `.git` directory needs (the object
 * store over the directory and `importPack`), without the rest of the package. A process that
 * only imports a pack (`gitport index-pack`) loads this module graph alone: every module loaded
 * is compiled code and heap it keeps.
 */
export { isPackError, PackError } from './errors.js';
export type { FsLike, FsPromisesLike, ObjectStoreFs } from './fs-like.js';
export { FsObjectStore } from './fs-store.js';
export { type ImportOptions, type ImportResult, importPack } from './pack-import.js';
export { openPackSpool } from './pack-spool.js';
