/**
 * The fast-import stream of a long-lived source repository, for measurements at scale: thousands
 * of code-like text files in hundreds of nested directories, each commit a small edit (a few hunks)
 * to a few files with a skewed popularity (some files are edited thousands of times), topic branches
 * forked from main, worked on while main moves on, and merged back, files added, renamed and deleted
 * now and then, multi-paragraph commit messages, dozens of authors, a release tag every few dozen
 * commits (annotated, some lightweight) and a `maint` branch at the last release.
 *
 * Every byte is ASCII, so a string's length is its byte length. The stream is produced commit by
 * commit (one chunk each), so building a history of any size holds only the current file contents
 * in memory, never the stream.
 */
import { prng } from '@gitport/test-helpers/prng';

export interface SourceHistoryOptions {
  /** Commits in the whole history: main-line commits, topic commits and merges. */
  commits: number;
  seed: number;
  /** Files in the first commit (more are added along the way). */
  files: number;
  /** Directories the files are spread over (nested up to four levels). */
  directories: number;
  /** About one topic branch (merged back later) opened every N commits (0: a linear history). */
  mergeEvery: number;
  /** A release tag every N commits (0: none); every tenth one is lightweight. */
  tagEvery: number;
}

const TOP = ['src', 'lib', 'include', 'builtin', 'Documentation', 't', 'contrib', 'compat', 'tools', 'scripts', 'po'];
const SYLLABLES =
  'ab ac ad al an ar as at be ca ce ch co cu de di do ed el en er es ex fi fo ga ge ha he hi id il im in io is it ka la le li lo ma me mi mo mu na ne ni no nu ob od of ol om on op or os ou pa pe pi po pr qu ra re ri ro ru sa se sh si so st su ta te th ti to tr tu ub ul um un ur us ut va ve vi wa we wh xa ya ze'.split(
    ' ',
  );
const PUNCT = [
  '(',
  ')',
  ');',
  '{',
  '}',
  '=',
  '==',
  '!=',
  '->',
  '+',
  '-',
  '*',
  '&&',
  '||',
  ',',
  ';',
  '[i]',
  '0',
  '1',
  'NULL',
];
const KEYWORDS = ['if', 'for', 'while', 'return', 'static', 'int', 'char', 'const', 'struct', 'void', 'else', 'size_t'];
const FIRST = ['Ada', 'Alan', 'Barbara', 'Brian', 'Dennis', 'Donald', 'Edsger', 'Frances', 'Grace', 'Guido'];
const LAST = ['Lovelace', 'Turing', 'Liskov', 'Kernighan', 'Ritchie', 'Knuth', 'Dijkstra', 'Allen', 'Hopper', 'Rossum'];
const EXTENSIONS = ['c', 'c', 'c', 'h', 'h', 'sh', 'txt', 'md', 'py', 'pl'];
const ZERO = '0000000000000000000000000000000000000000';

interface Topic {
  ref: string;
  tip: number;
  /** The topic's version of the files it changed. */
  files: Map<string, string[]>;
  left: number;
}

/** The fast-import stream, one chunk per commit (or tag). */
export function* generateSourceFastImport(options: SourceHistoryOptions): Generator<Uint8Array> {
  const random = prng(options.seed);
  const int = (n: number) => Math.floor(random() * n);
  const encoder = new TextEncoder();

  // a vocabulary of identifiers from two or three syllables
  const words: string[] = [];
  for (let i = 0; i < 600; i++) {
    const n = 2 + int(2);
    let w = '';
    for (let k = 0; k < n; k++) w += SYLLABLES[int(SYLLABLES.length)];
    words.push(w);
  }
  const word = () => words[int(words.length)] as string;
  const ident = () => (int(3) === 0 ? `${word()}_${word()}` : word());
  const authors = Array.from({ length: 40 }, (_, i) => {
    const first = FIRST[i % FIRST.length] as string;
    const last = LAST[(i * 7 + Math.floor(i / FIRST.length)) % LAST.length] as string;
    return `${first} ${last} <${first.toLowerCase()}.${last.toLowerCase()}${i}@example.com>`;
  });

  const line = (): string => {
    if (int(8) === 0) return '';
    const indent = '\t'.repeat(int(4));
    const n = 2 + int(9);
    const parts: string[] = int(4) === 0 ? [KEYWORDS[int(KEYWORDS.length)] as string] : [];
    for (let i = 0; i < n; i++) {
      const r = int(10);
      parts.push(r < 6 ? ident() : r < 9 ? (PUNCT[int(PUNCT.length)] as string) : String(int(4096)));
    }
    return indent + parts.join(' ');
  };
  const lines = (count: number) => Array.from({ length: count }, line);
  /** Mostly small files, a few of thousands of lines. */
  const fileLength = () => 8 + Math.floor(Math.exp(random() * Math.log(1600)));

  // the directory tree: top-level directories, then subdirectories under shallow parents
  const directories: { path: string; depth: number }[] = [{ path: '', depth: 0 }];
  const taken = new Set<string>();
  for (const name of TOP.slice(0, Math.max(1, Math.min(TOP.length, options.directories)))) {
    directories.push({ path: name, depth: 1 });
    taken.add(name);
  }
  while (directories.length < options.directories + 1) {
    const parent = directories[1 + int(directories.length - 1)] as { path: string; depth: number };
    if (parent.depth >= 4) continue;
    let path = `${parent.path}/${word()}`;
    while (taken.has(path)) path += `-${int(10)}`;
    taken.add(path);
    directories.push({ path, depth: parent.depth + 1 });
  }
  let fileCounter = 0;
  const newPath = () => {
    fileCounter++;
    // earlier directories hold more files
    const dir = directories[Math.floor(directories.length * random() ** 1.5)] as { path: string };
    const name = `${word()}-${fileCounter}.${EXTENSIONS[int(EXTENSIONS.length)]}`;
    return dir.path === '' ? name : `${dir.path}/${name}`;
  };

  // main's files, in creation order: a lower index is edited more often
  const content = new Map<string, string[]>();
  const order: string[] = [];
  const pick = () => order[Math.floor(order.length * random() * random())] as string;

  let mark = 0;
  let time = 1_100_000_000;
  let out: string[] = [];
  const flush = (): Uint8Array => {
    const chunk = encoder.encode(out.join(''));
    out = [];
    return chunk;
  };
  const data = (text: string) => {
    out.push(`data ${text.length}\n`, text, '\n');
  };
  const file = (path: string, body: string[]) => {
    out.push(`M 100644 inline ${path}\n`);
    data(body.length === 0 ? '' : `${body.join('\n')}\n`);
  };
  const sentence = (n: number) => Array.from({ length: n }, word).join(' ');
  const header = (ref: string, subject: string): number => {
    mark++;
    time += 300 + int(7200);
    const who = authors[int(authors.length)] as string;
    const paragraphs = int(4);
    let message = `${subject}\n`;
    for (let p = 0; p < paragraphs; p++) {
      message += '\n';
      const rows = 2 + int(4);
      for (let r = 0; r < rows; r++) message += `${sentence(6 + int(6))}\n`;
    }
    message += `\nSigned-off-by: ${who.slice(0, who.indexOf('>') + 1)}\n`;
    out.push(`commit ${ref}\nmark :${mark}\nauthor ${who} ${time} +0000\ncommitter ${who} ${time} +0000\n`);
    data(message);
    return mark;
  };
  /** A few hunks of a few lines each; long files tend to shrink, short ones to grow. */
  const edit = (body: string[]): string[] => {
    const next = body.slice();
    const hunks = 1 + int(3);
    for (let h = 0; h < hunks; h++) {
      const at = int(next.length + 1);
      const size = 1 + int(8);
      const r = int(100);
      const grow = next.length < 3000 ? 40 : 10;
      if (r < grow || next.length < 8) next.splice(at, 0, ...lines(size));
      else if (r < 75) for (let k = 0; k < size && at + k < next.length; k++) next[at + k] = line();
      else next.splice(at, size);
    }
    return next;
  };
  const area = (path: string) => path.split('/')[0]?.replace(/\..*$/, '') ?? 'core';

  // the first commit
  header('refs/heads/main', 'Initial revision');
  for (let i = 0; i < options.files; i++) {
    const path = newPath();
    const body = lines(fileLength());
    content.set(path, body);
    order.push(path);
    file(path, body);
  }
  yield flush();
  let mainTip = mark;
  let produced = 1;
  let nextTag = options.tagEvery;
  let tags = 0;
  let topicCounter = 0;
  const topics: Topic[] = [];

  const mainCommit = () => {
    const first = pick();
    const tip = header('refs/heads/main', `${area(first)}: ${sentence(3 + int(5))}`);
    out.push(`from :${mainTip}\n`);
    const touched = new Set([first]);
    const more = int(4) === 0 ? 1 + int(4) : 0;
    for (let k = 0; k < more; k++) touched.add(pick());
    for (const path of touched) {
      const body = edit(content.get(path) as string[]);
      content.set(path, body);
      file(path, body);
    }
    const roll = int(1000);
    if (roll < 15) {
      const path = newPath();
      const body = lines(fileLength());
      content.set(path, body);
      order.push(path);
      file(path, body);
    } else if (roll < 20 && order.length > 10) {
      const from = pick();
      if (!touched.has(from)) {
        const to = newPath();
        content.set(to, content.get(from) as string[]);
        content.delete(from);
        order[order.indexOf(from)] = to;
        out.push(`R ${from} ${to}\n`);
      }
    } else if (roll < 23 && order.length > 10) {
      const gone = order[order.length - 1 - int(Math.min(order.length, 50))] as string;
      if (!touched.has(gone)) {
        content.delete(gone);
        order.splice(order.indexOf(gone), 1);
        out.push(`D ${gone}\n`);
      }
    }
    mainTip = tip;
  };

  const topicCommit = (topic: Topic) => {
    const first = pick();
    const next = header(topic.ref, `${area(first)}: ${sentence(3 + int(5))}`);
    out.push(`from :${topic.tip}\n`);
    const touched = new Set([first]);
    if (int(3) === 0) touched.add(pick());
    for (const path of touched) {
      const body = edit(topic.files.get(path) ?? (content.get(path) as string[]));
      topic.files.set(path, body);
      file(path, body);
    }
    topic.tip = next;
    topic.left--;
  };

  /** Main takes the topic's version of every file it changed that main still has. */
  const merge = (topic: Topic) => {
    const name = topic.ref.slice('refs/heads/'.length);
    const tip = header('refs/heads/main', `Merge branch '${name}'`);
    out.push(`from :${mainTip}\nmerge :${topic.tip}\n`);
    for (const [path, body] of topic.files) {
      if (!content.has(path)) continue;
      content.set(path, body);
      file(path, body);
    }
    mainTip = tip;
    if (int(20) !== 0) out.push(`reset ${topic.ref}\nfrom ${ZERO}\n\n`);
  };

  while (produced < options.commits) {
    if (options.mergeEvery > 0 && topics.length < 8 && int(options.mergeEvery) === 0) {
      topicCounter++;
      const initials = `${(authors[int(authors.length)] as string).slice(0, 1)}${word().slice(0, 1)}`.toLowerCase();
      topics.push({
        ref: `refs/heads/${initials}/${word()}-${topicCounter}`,
        tip: mainTip,
        files: new Map(),
        left: 1 + int(6),
      });
    }
    const t = topics.length > 0 && int(2) === 0 ? int(topics.length) : -1;
    const topic = topics[t];
    if (topic && topic.left === 0) {
      merge(topic);
      topics.splice(t, 1);
    } else if (topic) topicCommit(topic);
    else mainCommit();
    produced++;
    if (options.tagEvery > 0 && produced >= nextTag) {
      nextTag += options.tagEvery;
      tags++;
      const name = `v${1 + Math.floor(tags / 100)}.${Math.floor(tags / 10) % 10}.${tags % 10}`;
      if (tags % 10 === 0) out.push(`reset refs/tags/${name}\nfrom :${mainTip}\n\n`);
      else {
        out.push(`tag ${name}\nfrom :${mainTip}\ntagger ${authors[0]} ${time} +0000\n`);
        data(`Release ${name}\n\n${sentence(8 + int(8))}\n`);
        out.push(`reset refs/heads/maint\nfrom :${mainTip}\n\n`);
      }
    }
    yield flush();
  }
  out.push('done\n');
  yield flush();
}
