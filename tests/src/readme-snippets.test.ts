/**
 * The TypeScript in the READMEs compiles: every ```ts / ```typescript block is written to a file of
 * its own and typechecked under strict TypeScript with the workspace's compiler settings
 * (tsconfig.base.json), importing the workspace packages by name, as a user would, through their
 * built declarations (`pnpm build` first, as `pnpm test` does). A block that is deliberately a
 * fragment is marked by `<!-- snippet: fragment -->` on the line before its fence and skipped.
 *
 * The files go to a directory under the git-ignored `tmp/` of the repository, whose
 * `node_modules` is a link to this package's, so the packages resolve as they do for tests.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
/** The READMEs whose snippets are checked, relative to the repository root: the root one and every package's. */
const READMES = [
  'README.md',
  ...readdirSync(join(root, 'packages'))
    .map((name) => `packages/${name}/README.md`)
    .filter((file) => existsSync(join(root, file)))
    .sort(),
];
const FRAGMENT_MARK = '<!-- snippet: fragment -->';

interface Snippet {
  /** Where the block is: the README, and the line of its first line of code (1-based). */
  file: string;
  line: number;
  code: string;
  fragment: boolean;
}

/** The ```ts and ```typescript blocks of a markdown text. */
function snippetsOf(file: string, markdown: string): Snippet[] {
  const lines = markdown.split('\n');
  const snippets: Snippet[] = [];
  let previous = '';
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,})(ts|typescript)\s*$/.exec(lines[i]!);
    if (open === null) {
      if (lines[i]!.trim() !== '') previous = lines[i]!.trim();
      continue;
    }
    const [, indent, fence] = open as unknown as [string, string, string];
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && lines[j]!.trim() !== fence) body.push(lines[j++]!.slice(indent.length));
    if (j === lines.length) throw new Error(`${file}:${i + 1}: a code block that is never closed`);
    snippets.push({ file, line: i + 2, code: body.join('\n'), fragment: previous === FRAGMENT_MARK });
    previous = '';
    i = j;
  }
  return snippets;
}

const work = join(root, 'tmp', `readme-snippets-${process.pid}`);
afterAll(() => rmSync(work, { recursive: true, force: true }));

let runs = 0;
/** Typechecks the snippets together (each a module of its own); returns `file:line: message` per error. */
function typecheck(snippets: Snippet[]): string[] {
  const dir = join(work, String(runs++));
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
  symlinkSync(join(root, 'tests', 'node_modules'), join(dir, 'node_modules'), 'dir');
  const base = ts.readConfigFile(join(root, 'tsconfig.base.json'), ts.sys.readFile);
  if (base.error !== undefined) throw new Error(ts.flattenDiagnosticMessageText(base.error.messageText, '\n'));
  const { options, errors } = ts.convertCompilerOptionsFromJson(
    {
      ...base.config.compilerOptions,
      strict: true,
      noEmit: true,
      composite: false,
      declaration: false,
      declarationMap: false,
      sourceMap: false,
      types: ['node'],
    },
    dir,
  );
  if (errors.length > 0) {
    throw new Error(errors.map((e) => ts.flattenDiagnosticMessageText(e.messageText, '\n')).join('\n'));
  }
  const where = new Map<string, Snippet>();
  for (const [n, snippet] of snippets.entries()) {
    const path = join(dir, `snippet-${n}.ts`);
    // Each snippet is a module, so top-level await works and names do not clash between snippets.
    writeFileSync(path, `${snippet.code}\nexport {};\n`);
    where.set(path, snippet);
  }
  const program = ts.createProgram([...where.keys()], options);
  const found: string[] = [];
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    const snippet = diagnostic.file === undefined ? undefined : where.get(diagnostic.file.fileName);
    if (diagnostic.file === undefined || snippet === undefined) {
      found.push(`${diagnostic.file ? relative(root, diagnostic.file.fileName) : 'tsc'}: ${message}`);
      continue;
    }
    const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
    found.push(`${snippet.file}:${snippet.line + line}: ${message}`);
  }
  return found;
}

describe('README snippets', () => {
  it('finds blocks, honours the fragment mark, and reports an error at its README line', () => {
    const markdown = [
      '# Example',
      '```ts',
      "import { createBus } from '@gitport/bus';",
      "const bus = createBus({ id: 'a' });",
      '```',
      '',
      '```typescript',
      'const n: number = "not a number";',
      '```',
      FRAGMENT_MARK,
      '```ts',
      'bus.close();',
      '```',
      '```sh',
      'pnpm test',
      '```',
    ].join('\n');
    const snippets = snippetsOf('EXAMPLE.md', markdown);
    expect(snippets.map(({ line, fragment }) => [line, fragment])).toEqual([
      [3, false],
      [8, false],
      [12, true],
    ]);
    const errors = typecheck(snippets.filter((s) => !s.fragment));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^EXAMPLE\.md:8: Type 'string' is not assignable to type 'number'/);
  });

  it('compiles every TypeScript block of the READMEs under strict TypeScript', () => {
    const snippets = READMES.flatMap((file) => snippetsOf(file, readFileSync(join(root, file), 'utf8')));
    const checked = snippets.filter((s) => !s.fragment);
    expect(checked.length).toBeGreaterThan(0);
    expect(typecheck(checked)).toEqual([]);
  });
});
