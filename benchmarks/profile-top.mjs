#!/usr/bin/env node
/**
 * The functions with the most self time in V8 CPU profiles (`node --cpu-prof`), summed over the
 * files given (e.g. every thread of `gitport serve` under GITPORT_BENCH_CPU_PROF):
 *
 *   node benchmarks/profile-top.mjs [--top N] <file.cpuprofile>...
 *
 * prints self ms, share of the busy samples (all but "(idle)"), and the function with its file and
 * line.
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

const args = process.argv.slice(2);
let top = 25;
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--top') top = Number(args[++i]);
  else files.push(args[i]);
}
if (files.length === 0) {
  process.stderr.write('usage: profile-top.mjs [--top N] <file.cpuprofile>...\n');
  process.exit(2);
}

const self = new Map();
let total = 0;
for (const file of files) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  profile.samples.forEach((id, i) => {
    const ms = (profile.timeDeltas[i] ?? 0) / 1000;
    const frame = byId.get(id)?.callFrame;
    if (!frame) return;
    const where = frame.url ? `${basename(frame.url)}:${frame.lineNumber + 1}` : '';
    const key = `${frame.functionName || '(anonymous)'} ${where}`.trim();
    self.set(key, (self.get(key) ?? 0) + ms);
    total += ms;
  });
}
const idle = self.get('(idle)') ?? 0;
self.delete('(idle)');
const busy = total - idle;
const rows = [...self].sort((a, b) => b[1] - a[1]).slice(0, top);
process.stdout.write(`${busy.toFixed(0)} ms busy (${idle.toFixed(0)} ms idle) sampled in ${files.length} profile(s)\n`);
for (const [key, ms] of rows) {
  process.stdout.write(`${ms.toFixed(0).padStart(9)} ms ${((100 * ms) / busy).toFixed(1).padStart(5)}%  ${key}\n`);
}
