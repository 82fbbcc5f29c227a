import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RefStoreFixture } from '@gitport/test-helpers/ref-store-conformance';
import { initialRefsConformance, refStoreConformance } from '@gitport/test-helpers/ref-store-conformance';
import { nodeFs } from './fs.node.js';
import { FsRefStore } from './fs-ref-store.js';
import { MemoryFs } from './memory-fs.js';

const overNodeFs = (sync: boolean) => async (): Promise<RefStoreFixture> => {
  const dir = await mkdtemp(join(tmpdir(), 'gitport-refs-conf-'));
  return { store: new FsRefStore(nodeFs({ sync }), dir), cleanup: () => rm(dir, { recursive: true, force: true }) };
};
const overMemoryFs = async (): Promise<RefStoreFixture> => {
  const fs = new MemoryFs();
  await fs.promises.mkdir('/repo.git');
  return { store: new FsRefStore(fs, '/repo.git') };
};

refStoreConformance('FsRefStore over Node fs', overNodeFs(false));
refStoreConformance('FsRefStore over Node fs (synchronous calls)', overNodeFs(true));
refStoreConformance('FsRefStore over the memory fs', overMemoryFs);
initialRefsConformance('FsRefStore over Node fs', overNodeFs(false));
initialRefsConformance('FsRefStore over Node fs (synchronous calls)', overNodeFs(true));
initialRefsConformance('FsRefStore over the memory fs', overMemoryFs);
