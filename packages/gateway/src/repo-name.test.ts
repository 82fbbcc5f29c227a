import { describe, expect, it } from 'vitest';
import { decodeRepoName, isValidRepoName } from './repo-name.js';

describe('repository names', () => {
  it('accepts plain names', () => {
    for (const name of ['demo', 'a', 'my-repo', 'my_repo.v2', 'A9']) expect(decodeRepoName(name)).toBe(name);
    expect(decodeRepoName('d%65mo')).toBe('demo');
  });

  it.each([
    '..',
    '.',
    '%2e%2e',
    '%2E%2E',
    '.%2e',
    '%252e%252e',
    '..%2f..%2fetc',
    '..%5c..%5cetc',
    'a%2fb',
    'a%5cb',
    'a\\b',
    'a/b',
    '%00',
    'demo%00',
    '%c0%ae%c0%ae',
    '%e2%80%a4%e2%80%a4',
    '%ef%bc%8f',
    '%ef%bc%8e%ef%bc%8e',
    '%u002e',
    '.hidden',
    '-rf',
    'a..b',
    'x.lock',
    '',
    '%',
    '%zz',
    'a'.repeat(101),
    'caf%c3%a9',
  ])('refuses %j', (segment) => {
    expect(() => decodeRepoName(segment)).toThrowError(expect.objectContaining({ code: 'GATEWAY_BAD_NAME' }));
  });

  it('validates decoded names without decoding again', () => {
    expect(isValidRepoName('%2e')).toBe(false);
    expect(isValidRepoName('demo')).toBe(true);
  });
});
