/**
 * What a partial clone records, the way git does (partial_clone_register in list-objects-filter-options.c,
 * Documentation/gitrepository-layout.adoc and technical/partial-clone.adoc):
 *
 *   [core]        repositoryformatversion = 1      (extensions are read only at version 1)
 *   [extensions]  partialClone = <remote>          (the promisor remote of lazy fetches)
 *   [remote "<remote>"]
 *                 promisor = true
 *                 partialclonefilter = <filter-spec>   (later fetches from it use this filter)
 *
 * and `objects/pack/pack-<hash>.promisor` beside every pack received from the promisor remote
 * (the refs it was fetched for, `<oid> <ref>` a line; empty for a lazy fetch), which tells git
 * that objects those packs reference but lack are promised, not lost.
 */
import type { FetchResult, Repository } from '@gitport/protocol';
import { checkFilterSpec } from '@gitport/protocol/internal/filter-spec';
import { GitportError } from './errors.js';
import { joinPath } from './fs.js';
import type { GitRepository } from './repository.js';

/** A filter-spec checked with git's grammar; a bad one is `FILTER_INVALID`. */
export function checkFilter(spec: string): string {
  try {
    return checkFilterSpec(spec);
  } catch (error) {
    throw new GitportError('FILTER_INVALID', (error as Error).message, { cause: error });
  }
}

/** The partial-clone settings of a git config: the promisor remote and its filter. */
export interface PartialCloneConfig {
  /** `extensions.partialClone`. */
  remote: string;
  /** `remote.<remote>.partialclonefilter`, when set. */
  filter?: string;
  /** `remote.<remote>.url`, when set. */
  url?: string;
}

/** `section` → `key` → last value, for the keys of a git config (sections and keys lower-cased, subsections kept). */
function parseConfig(text: string): Map<string, Map<string, string>> {
  const sections = new Map<string, Map<string, string>>();
  let current: Map<string, string> | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]/.exec(line);
    if (header) {
      const name = `${header[1]!.toLowerCase()}${header[2] === undefined ? '' : `.${header[2].replace(/\\(.)/g, '$1')}`}`;
      current = sections.get(name) ?? new Map();
      sections.set(name, current);
      continue;
    }
    const entry = /^([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$/.exec(line);
    if (!entry || !current) continue;
    let value = (entry[2] ?? 'true').replace(/\s+[#;].*$/, '').trim();
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
    current.set(entry[1]!.toLowerCase(), value.replace(/\\(.)/g, '$1'));
  }
  return sections;
}

/** The partial-clone settings of a repository's config text; undefined when it is no partial clone. */
export function partialCloneConfig(config: string): PartialCloneConfig | undefined {
  const sections = parseConfig(config);
  const remote = sections.get('extensions')?.get('partialclone');
  if (remote === undefined) return undefined;
  const section = sections.get(`remote.${remote}`);
  const filter = section?.get('partialclonefilter');
  const url = section?.get('url');
  return { remote, ...(filter !== undefined ? { filter } : {}), ...(url !== undefined ? { url } : {}) };
}

/** The repository's partial-clone settings, read from its config. */
export async function readPartialClone(repository: Repository): Promise<PartialCloneConfig | undefined> {
  const repo = repository as Partial<GitRepository>;
  if (!repo.fs || !repo.gitDir) return undefined;
  const config = await repo.fs.readText(joinPath(repo.gitDir, 'config'));
  return config === undefined ? undefined : partialCloneConfig(config);
}

/** Records `remote` as the repository's promisor remote with `filter`, as `git clone --filter` does. */
export async function registerPromisor(repository: GitRepository, remote: string, filter: string): Promise<void> {
  const path = joinPath(repository.gitDir, 'config');
  const config = (await repository.fs.readText(path)) ?? '';
  const registered = withPromisor(config, remote, filter);
  if (registered !== config) await repository.fs.write(path, registered);
}

/** A config's text with `remote` recorded as the promisor remote with `filter` (the same text when it is). */
export function withPromisor(configIn: string, remote: string, filter: string): string {
  let config = configIn;
  const known = partialCloneConfig(config);
  if (known?.remote === remote && known.filter === filter) return config;
  if (/^\s*repositoryformatversion\s*=\s*0\s*$/im.test(config)) {
    config = config.replace(/^(\s*repositoryformatversion\s*=\s*)0(\s*)$/im, '$11$2');
  } else if (!/^\s*repositoryformatversion\s*=/im.test(config)) {
    config = `[core]\n\trepositoryformatversion = 1\n${config}`;
  }
  const quoted = remote.replace(/["\\]/g, '\\$&');
  const lines = [
    ...(known === undefined ? ['[extensions]', `\tpartialClone = ${remote}`] : []),
    `[remote "${quoted}"]`,
    '\tpromisor = true',
    `\tpartialclonefilter = ${filter}`,
  ];
  return `${config}${config === '' || config.endsWith('\n') ? '' : '\n'}${lines.join('\n')}\n`;
}

/**
 * Writes `pack-<hash>.promisor` beside a pack received from the promisor remote: the refs it was
 * fetched for (a lazy fetch has none).
 */
export async function markPromisorPack(
  repository: Repository,
  result: Pick<FetchResult, 'pack' | 'refs' | 'wants'>,
): Promise<void> {
  const repo = repository as Partial<GitRepository>;
  if (!repo.fs || !repo.gitDir || result.pack === undefined) return;
  const wanted = new Set(result.wants);
  const lines = result.refs.filter((r) => r.name !== 'HEAD' && wanted.has(r.oid)).map((r) => `${r.oid} ${r.name}\n`);
  await repo.fs.write(joinPath(repo.gitDir, 'objects', 'pack', `pack-${result.pack.hash}.promisor`), lines.join(''));
}

/** The remotes of a config whose `url` is `url`, in order. */
function remotesOf(config: string, url: string): string[] {
  const names: string[] = [];
  for (const [name, keys] of parseConfig(config)) {
    if (name.startsWith('remote.') && keys.get('url') === url) names.push(name.slice('remote.'.length));
  }
  return names;
}

/** What a fetch from `url` into `local` does about partial clone. */
export interface FetchFilterPlan {
  /** The filter to send: the one given, else the promisor remote's `partialclonefilter`. */
  filter?: string;
  /** The remote to record as the promisor (a filter was given) or that already is (its packs get `.promisor`). */
  remote?: string;
  /** Whether the remote must be recorded as promisor after the fetch. */
  register: boolean;
}

/**
 * A fetch's filter, as git's fetch chooses it: a given one is checked (`FILTER_INVALID`) and
 * makes the remote a promisor remote (git's `fetch --filter`); without one, a fetch from the
 * promisor remote uses its recorded `partialclonefilter`.
 */
export async function planFetchFilter(
  local: Repository,
  url: string,
  given: string | undefined,
): Promise<FetchFilterPlan> {
  if (given !== undefined) checkFilter(given);
  const repo = local as Partial<GitRepository>;
  const config = repo.fs && repo.gitDir ? ((await repo.fs.readText(joinPath(repo.gitDir, 'config'))) ?? '') : '';
  const known = partialCloneConfig(config);
  const names = remotesOf(config, url);
  const promisor = known && names.includes(known.remote) ? known : undefined;
  if (given !== undefined) {
    const remote = promisor?.remote ?? names[0] ?? 'origin';
    return { filter: given, remote, register: repo.fs !== undefined };
  }
  if (promisor === undefined) return { register: false };
  return {
    ...(promisor.filter !== undefined ? { filter: promisor.filter } : {}),
    remote: promisor.remote,
    register: false,
  };
}
