/**
 * `gitport/node`: everything in `gitport`, plus Node's fs adapter and shortcuts that open and
 * create repositories on a Node path.
 */
import { type NodeFsOptions, nodeFs } from './fs.node.js';
import { FsRepositoryRegistry } from './registry.js';
import {
  type GitRepository,
  type InitOptions,
  initRepository,
  type OpenOptions,
  openRepository,
} from './repository.js';

export * from './index.js';
export { type NodeFsOptions, nodeFs };

/** Opens the repository at a Node path (a git directory, or a working tree holding `.git`). */
export function openNodeRepository(path: string, options?: OpenOptions): Promise<GitRepository> {
  return openRepository(nodeFs(), path, options);
}

/** Creates a repository at a Node path (bare unless told). */
export function initNodeRepository(path: string, options?: InitOptions): Promise<GitRepository> {
  return initRepository(nodeFs(), path, options);
}

/** Every bare repository `<root>/<name>.git` under a Node directory. */
export function nodeRepositories(root: string, options?: OpenOptions): FsRepositoryRegistry {
  return new FsRepositoryRegistry(nodeFs(), root, options);
}
