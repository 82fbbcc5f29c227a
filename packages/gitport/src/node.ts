/**
 * `gitport/node`: everything in `gitport`, plus Node's fs adapter and shortcuts that open and
 * create repositories on a Node path.
 */
import { bitmapServing } from '@gitport/pack/internal/bitmap-serving';
import { FsObjectStore } from '@gitport/pack/internal/fs-store';
import { readPackIndexFile } from '@gitport/pack/internal/idx-read';
import { openPackSpool } from '@gitport/pack/internal/pack-spool';
import { type NodeFsOptions, nodeFs } from './fs.node.js';
import { FsRepositoryRegistry } from './registry.js';
import {
  type GitRepository,
  type InitOptions,
  initRepository,
  type ObjectStoreFactory,
  type OpenOptions,
  openRepository,
  packFs,
} from './repository.js';

export * from './exports.js';
export { encodeGitRequest, GIT_STREAM, type GitRequest, parseGitRequest } from './git-request.js';
// the hosts load the protocol servers on their first request (see host.node.ts)
export { host, hostGit, hostReadOnly } from './host.node.js';
export type { Host, HostOptions } from './host-core.js';
export { type NodeFsOptions, nodeFs };

/**
 * The object store of the Node shortcuts below (unless `objects` is given): the default
 * `FsObjectStore`, serving by reachability bitmaps where a pack has a `.bitmap` (see
 * `@gitport/pack`'s `bitmapServing`), reading pack indexes piece by piece into columns
 * (`readPackIndexFile`; in a worker thread, where nodeFs reads synchronously, the ids of a large
 * index stay in its file) and writing an incoming pack to a temporary file as it arrives
 * (`openPackSpool`); the browser default leaves the first two out, and spools only over an fs
 * that brings the spool (`nodeFs`).
 */
export const nodeObjects: ObjectStoreFactory = (fs, gitDir) =>
  new FsObjectStore(packFs(fs), gitDir, {
    bitmaps: bitmapServing,
    indexReader: readPackIndexFile,
    packSpool: openPackSpool,
  });

function withNodeObjects<T extends OpenOptions>(options: T): T {
  return { ...options, objects: options.objects ?? nodeObjects };
}

/**
 * Opens the repository at a Node path (a git directory, or a working tree holding `.git`).
 * `sync` as for nodeFs (default: synchronous calls in worker threads only).
 */
export function openNodeRepository(path: string, options: OpenOptions & NodeFsOptions = {}): Promise<GitRepository> {
  return openRepository(nodeFs({ sync: options.sync }), path, withNodeObjects(options));
}

/** Creates a repository at a Node path (bare unless told); `sync` as for nodeFs. */
export function initNodeRepository(path: string, options: InitOptions & NodeFsOptions = {}): Promise<GitRepository> {
  return initRepository(nodeFs({ sync: options.sync }), path, withNodeObjects(options));
}

/** Every bare repository `<root>/<name>.git` under a Node directory; `sync` as for nodeFs. */
export function nodeRepositories(root: string, options: OpenOptions & NodeFsOptions = {}): FsRepositoryRegistry {
  return new FsRepositoryRegistry(nodeFs({ sync: options.sync }), root, withNodeObjects(options));
}
