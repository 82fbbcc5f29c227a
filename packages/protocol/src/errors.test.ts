import { describe, expect, it } from 'vitest';
import { ProtocolError, peerErrorMessage } from './errors.js';

describe('peerErrorMessage', () => {
  it('lets out the messages of errors about the exchange, on one line', () => {
    expect(peerErrorMessage(new ProtocolError('PROTOCOL_BAD_LINE', 'bad\nline\r\nhere'))).toBe('bad line here');
    expect(peerErrorMessage(Object.assign(new Error('pack truncated'), { code: 'PACK_TRUNCATED' }))).toBe(
      'pack truncated',
    );
    expect(peerErrorMessage(Object.assign(new Error('x'.repeat(5000)), { code: 'PACK_BAD_DELTA' }))).toHaveLength(1000);
  });

  it('names only the code of other typed errors, and nothing of untyped ones', () => {
    const local = Object.assign(new Error('cannot write /home/u/repo.git/objects/pack/tmp_pack_1'), {
      code: 'STORE_IO',
    });
    expect(peerErrorMessage(local)).toBe('internal error (STORE_IO)');
    expect(peerErrorMessage(Object.assign(new Error('/a/b is shorter'), { code: 'OBJECT_CORRUPT' }))).toBe(
      'internal error (OBJECT_CORRUPT)',
    );
    expect(peerErrorMessage(new TypeError("Cannot read properties of undefined (reading 'x')"))).toBe('internal error');
    expect(peerErrorMessage(Object.assign(new Error('boom'), { code: 'lower case or\nnewline' }))).toBe(
      'internal error',
    );
    expect(peerErrorMessage('a string')).toBe('internal error');
    expect(peerErrorMessage(undefined)).toBe('internal error');
  });
});
