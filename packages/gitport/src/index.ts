/**
 * gitport: repositories on disk or in the browser, hosting a repository on a bus peer, and
 * clone/fetch/push from another context.
 */
export { GitportError, type GitportErrorCode, isGitportError } from './errors.js';
export {
  type FileHandleLike,
  type FsLike,
  type FsPromisesLike,
  type FsStat,
  GitFs,
  type GitFsOptions,
} from './fs.js';
export { FsRefStore, isValidRefName } from './fs-ref-store.js';
export { MemoryFs } from './memory-fs.js';
export { OpfsFs } from './opfs-fs.js';
