import { refStoreConformance } from '@gitport/test-helpers/ref-store-conformance';
import { describe, expect, it } from 'vitest';
import { isValidRefName, MemoryRefStore } from './ref-store.js';

refStoreConformance('MemoryRefStore', async () => ({ store: new MemoryRefStore() }));

describe('isValidRefName', () => {
  it('follows git check-ref-format', () => {
    for (const good of ['refs/heads/main', 'refs/tags/v1.0', 'refs/heads/a/b-c_d', 'refs/heads/ünïcode']) {
      expect(isValidRefName(good), good).toBe(true);
    }
    for (const bad of [
      '',
      '@',
      'main',
      'refs//x',
      '/refs/x',
      'refs/x/',
      'refs/x.',
      'refs/.x',
      'refs/x.lock',
      'refs/a..b',
      'refs/a b',
      'refs/a:b',
      'refs/a?',
      'refs/a*',
      'refs/a[',
      'refs/a\\b',
      'refs/a^',
      'refs/a~',
      'refs/a@{b',
      'refs/a\x01',
    ]) {
      expect(isValidRefName(bad), JSON.stringify(bad)).toBe(false);
    }
    expect(isValidRefName('HEAD', { allowOneLevel: true })).toBe(true);
  });
});
