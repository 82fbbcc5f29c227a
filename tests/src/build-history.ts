/**
 * Builds (or finds in the cache) a named history preset and prints its path and how long it took:
 *
 *   node --import tsx tests/src/build-history.ts large [cache dir]
 *
 * so that the `large` corpus can be built once per machine ahead of `pnpm bench`.
 */
import { ensureHistory, HISTORY_PRESETS, type HistoryPreset } from './history.js';

const name = process.argv[2] as HistoryPreset;
if (!(name in HISTORY_PRESETS)) {
  process.stderr.write(`usage: build-history.ts (${Object.keys(HISTORY_PRESETS).join(' | ')}) [cache dir]\n`);
  process.exit(2);
}
const start = performance.now();
const history = await ensureHistory(HISTORY_PRESETS[name], process.argv[3]);
process.stdout.write(`${name} ${history.gitDir} ${((performance.now() - start) / 1000).toFixed(1)} s\n`);
