/**
 * The set of repositories a host serves, by name. `FsRepositoryRegistry` keeps each one as a
 * bare repository `<root>/<name>.git` on any injected fs (Node's, lightning-fs, OPFS, memory);
 * `staticRepositories` serves a fixed map of already composed repositories.
 *
 * Names: `[A-Za-z0-9][A-Za-z0-9._-]*`, at most 100 characters, not ending in `.git` or `.lock`
 * (the `.git` suffix belongs to the directory, not to the name).
 */
import type { ObjectStore } from '@gitport/pack';
import { GitportError } from './errors.js';
import { type FsLike, type FsPromisesLike, GitFs, joinPath } from './fs.js';
import type { RefStoreLike } from './fs-ref-store.js';
import { type GitRepository, initRepository, type OpenOptions, openRepository } from './repository.js';
import { removeStaleFiles } from './stale-files.js';

/** What a host serves: objects and refs (the protocol package's `Repository`). */
export interface HostedRepository {
  objects: ObjectStore;
  refs: RefStoreLike;
}

export interface RepositoryRegistry {
  list(): Promise<string[]>;
  /** The repository, or undefined when there is none of that name. */
  open(name: string): Promise<HostedRepository | undefined>;
  /** Creates an empty repository; `REPO_EXISTS` when the name is taken. */
  create(name: string, options?: { defaultBranch?: string }): Promise<HostedRepository>;
  /** Deletes a repository; false when there was none. */
  delete(name: string): Promise<boolean>;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

export function isValidRepositoryName(name: string): boolean {
  return NAME.test(name) && !name.endsWith('.git') && !name.endsWith('.lock') && !name.includes('..');
}

export function assertRepositoryName(name: string): void {
  if (!isValidRepositoryName(name)) {
    throw new GitportError('REPO_INVALID_NAME', `invalid repository name ${JSON.stringify(name)}`);
  }
}

export class FsRepositoryRegistry implements RepositoryRegistry {
  readonly fs: GitFs;
  readonly root: string;
  readonly #options: OpenOptions;
  readonly #open = new Map<string, Promise<GitRepository>>();

  constructor(fs: FsLike | FsPromisesLike | GitFs, root: string, options: OpenOptions = {}) {
    this.fs = fs instanceof GitFs ? fs : new GitFs(fs);
    this.root = root.replace(/\/+$/, '') || '/';
    this.#options = options;
  }

  #dir(name: string): string {
    return joinPath(this.root, `${name}.git`);
  }

  async list(): Promise<string[]> {
    const names: string[] = [];
    for (const entry of await this.fs.list(this.root)) {
      if (!entry.endsWith('.git')) continue;
      const name = entry.slice(0, -4);
      if (isValidRepositoryName(name) && (await this.fs.exists(joinPath(this.root, entry, 'HEAD')))) names.push(name);
    }
    return names.sort();
  }

  async open(name: string): Promise<GitRepository | undefined> {
    if (!isValidRepositoryName(name)) return undefined;
    const cached = this.#open.get(name);
    if (cached) {
      // The directory may have been removed behind our back (by another context or by hand).
      if (await this.fs.exists(joinPath(this.#dir(name), 'HEAD'))) return cached;
      this.#open.delete(name);
    }
    try {
      // first opened here (a host starting to serve it): what crashed writers left goes first
      const opening = openRepository(this.fs, this.#dir(name), this.#options).then(async (repository) => {
        await removeStaleFiles(repository.fs, repository.gitDir, { staleAfterMs: this.#options.staleAfterMs });
        return repository;
      });
      this.#open.set(name, opening);
      return await opening;
    } catch (error) {
      this.#open.delete(name);
      if ((error as { code?: string }).code === 'REPO_NOT_FOUND') return undefined;
      throw error;
    }
  }

  async create(name: string, options: { defaultBranch?: string } = {}): Promise<GitRepository> {
    assertRepositoryName(name);
    await this.fs.mkdirp(this.root);
    const repository = await this.fs.withLock(`repo:${this.#dir(name)}`, async () => {
      if (await this.fs.exists(this.#dir(name))) {
        throw new GitportError('REPO_EXISTS', `repository ${name} already exists`);
      }
      return initRepository(this.fs, this.#dir(name), { ...this.#options, ...options, bare: true });
    });
    this.#open.set(name, Promise.resolve(repository));
    return repository;
  }

  async delete(name: string): Promise<boolean> {
    if (!isValidRepositoryName(name)) return false;
    this.#open.delete(name);
    if (!(await this.fs.exists(this.#dir(name)))) return false;
    await this.fs.removeTree(this.#dir(name));
    return true;
  }
}

/** A fixed set of repositories (create and delete are refused). */
export function staticRepositories(
  repositories: Record<string, HostedRepository> | ReadonlyMap<string, HostedRepository>,
): RepositoryRegistry {
  const map =
    repositories instanceof Map
      ? (repositories as ReadonlyMap<string, HostedRepository>)
      : new Map(Object.entries(repositories as Record<string, HostedRepository>));
  return {
    list: async () => [...map.keys()].sort(),
    open: async (name) => map.get(name),
    create: async (name) => {
      throw new GitportError('REPO_EXISTS', `cannot create ${name}: this host serves a fixed set of repositories`);
    },
    delete: async () => false,
  };
}
