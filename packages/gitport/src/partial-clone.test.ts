import { describe, expect, it } from 'vitest';
import { MemoryFs } from './memory-fs.js';
import { checkFilter, partialCloneConfig, registerPromisor } from './partial-clone.js';
import { initRepository } from './repository.js';

describe('partial-clone settings', () => {
  it('reads what git clone --filter writes', () => {
    const config = [
      '[core]',
      '\trepositoryformatversion = 1',
      '\tbare = true',
      '[remote "origin"]',
      '\turl = http://127.0.0.1:8080/repo.git',
      '\tpromisor = true',
      '\tpartialclonefilter = blob:none',
      '[extensions]',
      '\tpartialclone = origin',
      '',
    ].join('\n');
    expect(partialCloneConfig(config)).toEqual({
      remote: 'origin',
      filter: 'blob:none',
      url: 'http://127.0.0.1:8080/repo.git',
    });
    expect(partialCloneConfig('[core]\n\tbare = true\n')).toBeUndefined();
    // section and key names are case-insensitive; the last value wins; quotes and comments go
    expect(
      partialCloneConfig(
        '[Extensions]\n\tPartialClone = "up" ; a comment\n[remote "up"]\n\tPartialCloneFilter = tree:0\n',
      ),
    ).toEqual({ remote: 'up', filter: 'tree:0' });
  });

  it('records a promisor remote once, at repository format version 1', async () => {
    const fs = new MemoryFs();
    const repository = await initRepository(fs, '/r.git');
    await registerPromisor(repository, 'origin', 'blob:none');
    await registerPromisor(repository, 'origin', 'blob:none');
    const config = (await repository.fs.readText('/r.git/config')) ?? '';
    expect(config).toMatch(/^\s*repositoryformatversion = 1$/m);
    expect(config.match(/partialClone = origin/g)).toHaveLength(1);
    expect(config.match(/partialclonefilter = blob:none/g)).toHaveLength(1);
    await registerPromisor(repository, 'origin', 'tree:0');
    expect(partialCloneConfig((await repository.fs.readText('/r.git/config')) ?? '')?.filter).toBe('tree:0');
  });

  it('refuses a filter-spec git refuses with FILTER_INVALID', () => {
    expect(checkFilter('blob:limit=1k')).toBe('blob:limit=1k');
    for (const spec of ['', 'blob:some', 'tree:x', 'object:type=file', 'sparse:path=/x']) {
      expect(() => checkFilter(spec)).toThrow(expect.objectContaining({ code: 'FILTER_INVALID' }));
    }
  });
});
