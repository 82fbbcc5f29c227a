import { describe, expect, it } from 'vitest';
import { describeWorkerError, isClientError } from './worker-error.js';

const coded = (code: string) => Object.assign(new Error(code), { code });

describe('which worker failures are the client', () => {
  it('counts wire errors, bad requests and aborts as the client', () => {
    for (const code of [
      'PROTOCOL_BAD_LINE',
      'PKTLINE_BAD_HEX',
      'TRANSPORT_ABORTED',
      'HTTP_BAD_REQUEST',
      'PACK_ABORTED',
    ]) {
      expect(isClientError(coded(code), 'git-upload-pack')).toBe(true);
    }
  });

  it('counts a bad pack as the client in a push only', () => {
    expect(isClientError(coded('PACK_BAD_CHECKSUM'), 'git-receive-pack')).toBe(true);
    expect(isClientError(coded('PACK_BAD_CHECKSUM'), 'git-upload-pack')).toBe(false);
  });

  it("counts Node's fs errors, store failures and errors without a code as the server's", () => {
    for (const code of [
      'EISDIR',
      'EMFILE',
      'EACCES',
      'ERR_INVALID_ARG_TYPE',
      'FS_READ_FAILED',
      'STORE_IO',
      'REF_CORRUPT',
    ]) {
      expect(isClientError(coded(code), 'git-receive-pack')).toBe(false);
    }
    expect(isClientError(new Error('bug'), 'http')).toBe(false);
    expect(isClientError('text', 'http')).toBe(false);
  });

  it('names the worker, the service, the repository and the code', () => {
    expect(describeWorkerError('w-1', coded('EMFILE'), { service: 'git-upload-pack', repository: 'a' })).toBe(
      'gitport worker w-1: git-upload-pack a: EMFILE',
    );
    expect(describeWorkerError('w-1', new Error('x'), { service: 'http', repository: '?' })).toBe(
      'gitport worker w-1: http ?: error without a code',
    );
  });
});
