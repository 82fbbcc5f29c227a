/**
 * A repository in standard git layout (gitrepository-layout(5)) over an injected fs:
 *
 *   <gitDir>/HEAD          "ref: refs/heads/<default branch>\n"
 *   <gitDir>/config        [core] repositoryformatversion = 0, bare = true|false
 *   (no description, info/ or hooks/: optional for git, as `git init --template=` leaves them out)
 *   <gitDir>/objects/      loose objects, info/, pack/ (pack-*.pack + pack-*.idx)
 *   <gitDir>/refs/heads/, refs/tags/, packed-refs
 *
 * A bare repository is the directory itself; a non-bare one keeps it in `<dir>/.git`.
 * `openRepository` composes `{ objects, refs }`: the objects are the pack package's
 * `FsObjectStore` over `<gitDir>` (or whatever `objects` factory is given), the refs are
 * `FsRefStore`.
 */
import type { ObjectStore, PackSpoolOpener } from '@gitport/pack';
import { FsObjectStore } from '@gitport/pack/internal/fs-store';
import { isValidRefName } from '@gitport/protocol/internal/ref-store';
import { GitportError } from './errors.js';
import { errorCode, type FsLike, type FsPromisesLike, GitFs, gitFsAfter, joinPath } from './fs.js';
import { FsRefStore } from './fs-ref-store.js';
import { PromisorObjectStore, type PromisorRemote, type PromisorStoreOptions } from './promisor.js';

export interface GitRepository {
  readonly objects: ObjectStore;
  readonly refs: FsRefStore;
  readonly fs: GitFs;
  /** The git directory (`<dir>` when bare, `<dir>/.git` otherwise). */
  readonly gitDir: string;
  readonly bare: boolean;
}

export type ObjectStoreFactory = (fs: GitFs, gitDir: string) => ObjectStore;

export interface OpenOptions {
  /**
   * Builds the object store; defaults to `@gitport/pack`'s `FsObjectStore` over the git
   * directory, which writes an incoming pack to a temporary file as it arrives over an fs that
   * brings a spool (`nodeFs`), and gathers it in memory otherwise.
   */
  objects?: ObjectStoreFactory;
  /**
   * Age from which a ref lock or a temporary file counts as left by a writer that died: the ref
   * store breaks such a lock when an update meets it, and a registry removes them when it opens
   * the repository (`removeStaleFiles`). Default 10 minutes.
   */
  staleAfterMs?: number;
  /**
   * A partial clone's promisor remote (`remote(url)` or `remote(bus, peer, name)`): objects the
   * repository lacks are fetched from it when read (see promisor.ts). Without it, a missing
   * object is missing.
   */
  promisor?: PromisorRemote;
  /** The filter of lazy fetches (default `blob:none`, as git's). */
  promisorFilter?: PromisorStoreOptions['filter'];
}

/** A new repository has no promisor remote: a partial clone wraps its store once it is set up. */
export interface InitOptions extends Omit<OpenOptions, 'promisor' | 'promisorFilter'> {
  /** Default true. */
  bare?: boolean;
  /** The branch HEAD points at; default `main`. */
  defaultBranch?: string;
}

/**
 * The fs as the pack store wants it: `rename` always present (GitFs copies where the fs cannot
 * rename), and `open` only where it gives positional reads (Node's), so OPFS and lightning-fs
 * read packs whole.
 */
export function packFs(fs: GitFs): ConstructorParameters<typeof FsObjectStore>[0] {
  const raw = fs.raw;
  return {
    readFile: (path, options) => raw.readFile(path, options),
    writeFile: async (path, data, options) => {
      await raw.writeFile(path, data, options);
    },
    mkdir: (path, options) => raw.mkdir(path, options),
    readdir: (path) => raw.readdir(path),
    stat: (path) => raw.stat(path),
    rename: (from, to) => fs.rename(from, to),
    unlink: async (path) => {
      await raw.unlink(path);
    },
    rmdir: async (path) => {
      await raw.rmdir(path);
    },
    ...(raw.open
      ? {
          open: async (path: string, flags: string) => {
            const handle = await raw.open!(path, flags);
            if (flags === 'r' && !handle.read) {
              await handle.close();
              throw Object.assign(new Error(`no positional read for ${path}`), { code: 'ENOSYS' });
            }
            return handle as Required<Pick<typeof handle, 'read' | 'close'>>;
          },
        }
      : {}),
  };
}

/**
 * The spool for incoming packs an fs brings along as `packSpool` (`nodeFs` brings `openPackSpool`):
 * the default store over it writes an incoming pack to a temporary file as it arrives. Over any
 * other fs (memory, OPFS) it gathers the pack in memory, and a bundle leaves the spool out.
 */
function packSpoolOf(fs: GitFs): PackSpoolOpener | undefined {
  return (fs.raw as { packSpool?: PackSpoolOpener }).packSpool;
}

const defaultObjects: ObjectStoreFactory = (fs, gitDir) => {
  const packSpool = packSpoolOf(fs);
  return new FsObjectStore(packFs(fs), gitDir, packSpool ? { packSpool } : {});
};

function toGitFs(fs: FsLike | FsPromisesLike | GitFs): GitFs {
  return fs instanceof GitFs ? fs : new GitFs(fs);
}

/** Creates a repository (refusing a directory that already holds one) and opens it. */
export async function initRepository(
  fsIn: FsLike | FsPromisesLike | GitFs,
  dir: string,
  options: InitOptions = {},
): Promise<GitRepository> {
  const fs = toGitFs(fsIn);
  const { gitDir, bare } = initTarget(dir, options);
  await writeLayout(fs, gitDir, bare, options);
  return openGitDir(fs, gitDir, bare, options);
}

/**
 * `initRepository` for a clone that has its pack on the way: the repository's stores at once,
 * its layout written meanwhile (`ready`: the repository once written, or the error initRepository
 * would have thrown). The stores are the repository's own, over its file system as it will be
 * (`gitFsAfter`: each of their file calls waits for the layout), so the pack's import starts as
 * its first bytes come, not once the file system wrote the layout.
 * `configLines` go into the new config (a clone's `[remote "origin"]`, written with the rest of
 * the layout rather than read back and rewritten afterwards).
 */
export function initRepositoryEarly(
  fsIn: FsLike | FsPromisesLike | GitFs,
  dir: string,
  options: InitOptions = {},
  configLines: readonly string[] = [],
): { early: Pick<GitRepository, 'objects' | 'refs'>; ready: Promise<GitRepository> } {
  const fs = toGitFs(fsIn);
  const { gitDir, bare } = initTarget(dir, options);
  // the stores first: one that cannot be made throws before anything is written
  let open!: () => void;
  const laid = new Promise<void>((resolve) => (open = resolve)).then(() =>
    writeLayout(fs, gitDir, bare, options, configLines),
  );
  const repository = openGitDir(gitFsAfter(fs, laid), gitDir, bare, options);
  open();
  const ready = laid.then(() => repository);
  ready.catch(() => {});
  return { early: repository, ready };
}

function initTarget(dir: string, options: InitOptions): { gitDir: string; bare: boolean } {
  const bare = options.bare ?? true;
  const branch = options.defaultBranch ?? 'main';
  if (!isValidRefName(`refs/heads/${branch}`)) {
    throw new GitportError('REF_INVALID_NAME', `invalid default branch ${JSON.stringify(branch)}`);
  }
  return { gitDir: bare ? dir.replace(/\/+$/, '') : joinPath(dir, '.git'), bare };
}

/** The new repository's directories and files (refusing a directory that already holds one). */
async function writeLayout(
  fs: GitFs,
  gitDir: string,
  bare: boolean,
  options: InitOptions,
  configLines: readonly string[] = [],
): Promise<void> {
  const branch = options.defaultBranch ?? 'main';
  // each level at once: the directory (made, or found when a repository is there already,
  // which is then refused), the directories in it, then what goes in them
  const [exists] = await Promise.all([
    fs.exists(joinPath(gitDir, 'HEAD')),
    fs.mkdirIn(gitDir).catch((error: unknown) => {
      // a file system whose mkdir makes no parents
      if (errorCode(error) !== 'ENOENT') throw error;
      return fs.mkdirp(gitDir);
    }),
  ]);
  if (exists) throw new GitportError('REPO_EXISTS', `a repository already exists at ${gitDir}`);
  const config = [
    '[core]',
    '\trepositoryformatversion = 0',
    '\tfilemode = true',
    `\tbare = ${bare}`,
    ...(bare ? [] : ['\tlogallrefupdates = true']),
    ...configLines,
    '',
  ].join('\n');
  await Promise.all([
    ...['objects', 'refs'].map((sub) => fs.mkdirIn(joinPath(gitDir, sub))),
    fs.write(joinPath(gitDir, 'config'), config),
  ]);
  // HEAD once config, objects/ and refs/ are there (what git looks for in a repository): its
  // presence is what makes the directory a repository. The directories within objects/ and
  // refs/ are made meanwhile (readers take them as empty until then, and git makes them on
  // demand anyway): one round trip less on a browser file system.
  await Promise.all([
    ...['objects/info', 'objects/pack', 'refs/heads', 'refs/tags'].map((sub) => fs.mkdirIn(joinPath(gitDir, sub))),
    fs.write(joinPath(gitDir, 'HEAD'), `ref: refs/heads/${branch}\n`),
  ]);
}

/**
 * Opens an existing repository: `path` is either a git directory (bare, or `.git` itself) or a
 * working tree holding `.git`. Throws `REPO_NOT_FOUND` otherwise.
 */
export async function openRepository(
  fsIn: FsLike | FsPromisesLike | GitFs,
  path: string,
  options: OpenOptions = {},
): Promise<GitRepository> {
  const fs = toGitFs(fsIn);
  const clean = path.replace(/\/+$/, '') || '/';
  const nested = joinPath(clean, '.git');
  if ((await fs.stat(joinPath(nested, 'HEAD')))?.isFile()) {
    return withPromisor(openGitDir(fs, nested, false, options), options);
  }
  const head = await fs.stat(joinPath(clean, 'HEAD'));
  const objects = await fs.stat(joinPath(clean, 'objects'));
  if (!head?.isFile() || !objects?.isDirectory()) {
    throw new GitportError('REPO_NOT_FOUND', `no git repository at ${path}`);
  }
  const config = (await fs.readText(joinPath(clean, 'config'))) ?? '';
  const bare = !/^\s*bare\s*=\s*false\s*$/im.test(config);
  return withPromisor(openGitDir(fs, clean, bare, options), options);
}

function openGitDir(fs: GitFs, gitDir: string, bare: boolean, options: InitOptions): GitRepository {
  const objects = (options.objects ?? defaultObjects)(fs, gitDir);
  const refs = new FsRefStore(
    fs,
    gitDir,
    options.staleAfterMs === undefined ? {} : { staleAfterMs: options.staleAfterMs },
  );
  return { objects, refs, fs, gitDir, bare };
}

/** `repository` reading the objects it lacks from `options.promisor`, if given (only `openRepository` does). */
function withPromisor(repository: GitRepository, options: OpenOptions): GitRepository {
  if (!options.promisor) return repository;
  const { refs, fs, gitDir } = repository;
  const objects = new PromisorObjectStore(
    repository.objects,
    { refs, fs, gitDir },
    options.promisor,
    options.promisorFilter === undefined ? {} : { filter: options.promisorFilter },
  );
  return { ...repository, objects };
}
