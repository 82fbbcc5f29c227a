import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { prefixMatcher } from './ref-prefixes.js';
import { fuzzParameters } from './test-fuzz.js';

describe('prefixMatcher', () => {
  it('selects what "some prefix starts the name" selects', () => {
    const text = fc.string({
      unit: fc.constantFrom('r', 'e', 'f', 's', '/', 'a', 'b', 'é', '\u{1f600}'),
      maxLength: 8,
    });
    const { seed, numRuns } = fuzzParameters('prefixMatcher', 500);
    fc.assert(
      fc.property(fc.array(text, { maxLength: 12 }), fc.array(text, { maxLength: 12 }), (prefixes, names) => {
        const matches = prefixMatcher(prefixes);
        for (const name of [...names, ...prefixes, 'HEAD', '']) {
          const expected = prefixes.length === 0 || prefixes.some((p) => name.startsWith(p));
          expect(matches(name), JSON.stringify({ prefixes, name })).toBe(expected);
        }
      }),
      { seed, numRuns },
    );
  });

  it('an empty prefix selects every name', () => {
    expect(prefixMatcher(['refs/x', '']).call(null, 'HEAD')).toBe(true);
    expect(prefixMatcher(['refs/heads/', 'refs/tags/'])('refs/remotes/a')).toBe(false);
    expect(prefixMatcher(['refs/heads/', 'refs/tags/'])('refs/tags/v1')).toBe(true);
  });
});
