import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../packages/', import.meta.url));
const packages = readdirSync(root).filter((name) => existsSync(`${root}${name}/package.json`));

describe('built packages import in plain Node', () => {
  it.each(packages)('%s', (name) => {
    const manifest = JSON.parse(readFileSync(`${root}${name}/package.json`, 'utf8')) as { name: string };
    const entry = `${root}${name}/dist/index.js`;
    expect(existsSync(entry), `${entry} is built (pnpm build)`).toBe(true);
    // Import by package name from the workspace root, without the `source` condition, so the
    // exports map and every dist import are exercised exactly as a user's Node would.
    const result = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const m = await import(${JSON.stringify(manifest.name)}); console.log(Object.keys(m).length);`,
      ],
      { cwd: fileURLToPath(new URL('..', import.meta.url)), encoding: 'utf8' },
    );
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });
});
