import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { refStoreConformance } from '@gitport/protocol/test-ref-store-conformance';
import { nodeFs } from './fs.node.js';
import { FsRefStore } from './fs-ref-store.js';
import { MemoryFs } from './memory-fs.js';

refStoreConformance('FsRefStore over Node fs', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'gitport-refs-conf-'));
  return { store: new FsRefStore(nodeFs(), dir), cleanup: () => rm(dir, { recursive: true, force: true }) };
});

refStoreConformance('FsRefStore over the memory fs', async () => {
  const fs = new MemoryFs();
  await fs.promises.mkdir('/repo.git');
  return { store: new FsRefStore(fs, '/repo.git') };
});
