/**
 * Test support: the seed and run count of a seeded fast-check property. The seed is printed so a
 * failure can be replayed (`GITPORT_FUZZ_SEED=<seed>`); `GITPORT_FUZZ_RUNS=N` makes a run N
 * times longer than the brief default.
 */
export function fuzzParameters(name: string, defaultRuns: number): { seed: number; numRuns: number } {
  const seed = Number(process.env.GITPORT_FUZZ_SEED ?? Date.now() % 2_147_483_647);
  const numRuns = defaultRuns * Math.max(1, Number(process.env.GITPORT_FUZZ_RUNS) || 1);
  console.log(`${name}: fast-check seed ${seed}, ${numRuns} runs (replay with GITPORT_FUZZ_SEED=${seed})`);
  return { seed, numRuns };
}
