/**
 * Capability lists, as in gitprotocol-capabilities(5):
 *
 *   capability-list  =  capability *(SP capability)
 *   capability       =  1*(LC_ALPHA / DIGIT / "-" / "_") ["=" value]
 *
 * A name may repeat (`symref=HEAD:refs/heads/main` once per symbolic ref). Order is kept.
 * In protocol v2 each capability is its own pkt-line (`fetch=shallow wait-for-done`), and the
 * value of a command capability is itself a space-separated list of features.
 */
export interface Capability {
  name: string;
  value?: string;
}

export class Capabilities {
  readonly list: readonly Capability[];
  constructor(list: Iterable<Capability> = []) {
    this.list = [...list];
  }

  /** Parses `a b=c d` (v0 form). Empty words are ignored. */
  static parse(text: string): Capabilities {
    const list: Capability[] = [];
    for (const word of text.split(' ')) {
      if (word === '') continue;
      const eq = word.indexOf('=');
      list.push(eq < 0 ? { name: word } : { name: word.slice(0, eq), value: word.slice(eq + 1) });
    }
    return new Capabilities(list);
  }

  has(name: string): boolean {
    return this.list.some((c) => c.name === name);
  }

  get(name: string): string | undefined {
    return this.list.find((c) => c.name === name)?.value;
  }

  getAll(name: string): string[] {
    return this.list.filter((c) => c.name === name && c.value !== undefined).map((c) => c.value as string);
  }

  /** In v2, a command's value lists its features: `fetch=shallow wait-for-done`. */
  features(name: string): Set<string> {
    const value = this.get(name);
    return new Set(value ? value.split(' ').filter((w) => w !== '') : []);
  }

  toString(): string {
    return this.list.map(formatCapability).join(' ');
  }
}

export function formatCapability(c: Capability): string {
  return c.value === undefined ? c.name : `${c.name}=${c.value}`;
}

/** The default agent string this package sends. */
export const DEFAULT_AGENT = 'gitport/0.1.0';

/**
 * Capabilities the upload-pack server implements (v0/v1), in git's order. Only these are
 * advertised; `no-done` only in stateless mode, as git does.
 */
export function uploadPackCapabilities(options: {
  stateless: boolean;
  agent: string;
  head?: string;
  symrefs?: ReadonlyMap<string, string>;
  /** Advertise `filter` (partial clone; default true). */
  filter?: boolean;
}): Capabilities {
  const list: Capability[] = [
    { name: 'multi_ack' },
    { name: 'thin-pack' },
    { name: 'side-band' },
    { name: 'side-band-64k' },
    { name: 'ofs-delta' },
    { name: 'shallow' },
    { name: 'deepen-since' },
    { name: 'deepen-not' },
    { name: 'deepen-relative' },
    { name: 'no-progress' },
    { name: 'include-tag' },
    { name: 'multi_ack_detailed' },
  ];
  if (options.stateless) list.push({ name: 'no-done' });
  for (const [from, to] of options.symrefs ?? []) list.push({ name: 'symref', value: `${from}:${to}` });
  list.push({ name: 'allow-tip-sha1-in-want' }, { name: 'allow-reachable-sha1-in-want' });
  if (options.filter !== false) list.push({ name: 'filter' });
  list.push({ name: 'object-format', value: 'sha1' }, { name: 'agent', value: options.agent });
  return new Capabilities(list);
}

/** Capabilities of the receive-pack server (push is always v0). */
export function receivePackCapabilities(options: { agent: string; pushOptions?: boolean }): Capabilities {
  const list: Capability[] = [
    { name: 'report-status' },
    { name: 'report-status-v2' },
    { name: 'delete-refs' },
    { name: 'side-band-64k' },
    { name: 'quiet' },
    { name: 'atomic' },
    { name: 'ofs-delta' },
  ];
  if (options.pushOptions !== false) list.push({ name: 'push-options' });
  list.push({ name: 'object-format', value: 'sha1' }, { name: 'agent', value: options.agent });
  return new Capabilities(list);
}

/** The protocol v2 capability advertisement (one capability per line after `version 2`). */
export function v2Capabilities(options: { agent: string; filter?: boolean }): Capabilities {
  return new Capabilities([
    { name: 'agent', value: options.agent },
    { name: 'ls-refs', value: 'unborn' },
    { name: 'fetch', value: options.filter === false ? 'shallow wait-for-done' : 'shallow wait-for-done filter' },
    { name: 'server-option' },
    { name: 'object-format', value: 'sha1' },
    { name: 'object-info' },
  ]);
}
