/**
 * gitport's servers on stdio, for `git clone "ext::node ... serve-stdio.ts %s <git-dir>"`.
 * The repository is loaded from the bare git directory into memory; after a push, the new
 * objects and ref updates are written back with git's plumbing (index-pack, update-ref with
 * the old values), so the test can judge the result with `git fsck`.
 */

import { serveReceivePack, serveUploadPack } from '@gitport/protocol';
import { createGitSandbox } from '@gitport/test-helpers/git';
import { loadRepository, saveRepository } from './helpers.js';

const [rawService, gitDir] = process.argv.slice(2);
const service = rawService?.startsWith('git-') ? rawService : `git-${rawService}`;
const sandbox = await createGitSandbox('gitport-serve-stdio-');
try {
  const repo = await loadRepository(sandbox, gitDir as string);
  const connection = {
    input: (async function* () {
      for await (const chunk of process.stdin) {
        const b = chunk as Buffer;
        yield new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
      }
    })(),
    write: (bytes: Uint8Array) =>
      new Promise<void>((resolve, reject) => process.stdout.write(bytes, (e) => (e ? reject(e) : resolve()))),
    end: async () => {},
  };
  const requested = /version=(\d)/.exec(process.env.GIT_PROTOCOL ?? '')?.[1];
  const protocol = requested === '2' ? 2 : requested === '1' ? 1 : 0;
  if (service === 'git-upload-pack') {
    await serveUploadPack(repo, connection, { protocol });
  } else if (service === 'git-receive-pack') {
    const result = await serveReceivePack(repo, connection, {
      protocol,
      allowNonFastForward: process.env.GITPORT_DENY_NON_FF !== '1',
    });
    if (result.updated.length > 0) await saveRepository(sandbox, repo, gitDir as string);
  } else {
    throw new Error(`unknown service ${service}`);
  }
} catch (error) {
  process.stderr.write(`serve-stdio: ${(error as Error).stack}\n`);
  process.exitCode = 1;
} finally {
  await sandbox.cleanup();
}
