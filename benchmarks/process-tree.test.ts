/** The /proc readings the scale rows rest on (process-tree.ts), against real child processes. */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { measureServer, processTree, runCommand } from './process-tree.js';

describe('process tree figures', () => {
  it("counts a command's CPU, its private memory and its output", async () => {
    // 64 MB of anonymous pages touched, a busy loop, 3 bytes out
    const cost = await runCommand([
      process.execPath,
      '-e',
      'const b = Buffer.alloc(64 << 20, 1); let x = 0; for (let i = 0; i < 2e8; i++) x += i; process.stdout.write(String(b[7] + x % 2 + 10))',
    ]);
    expect(cost.stdoutBytes).toBe(2);
    expect(cost.peakBytes).toBeGreaterThan(64 << 20);
    expect(cost.cpuMs).toBeGreaterThan(0);
    await expect(runCommand(['false'])).rejects.toThrow(/exited 1/);
  });

  it("measures a server's tree: a child it starts counts in its memory while alive, in its CPU once reaped", async () => {
    // the child allocates 96 MB, spins, and prints its own CPU ms; the server relays the line
    const child = `const b = Buffer.alloc(96 << 20, 1); let x = 0; for (let i = 0; i < 1e8; i++) x += i;
      const u = process.cpuUsage(); console.log(String((u.user + u.system) / 1000 + b[0] + (x % 1)))`;
    const server = spawn(
      process.execPath,
      [
        '-e',
        `const { spawn } = require('node:child_process');
         process.stdout.write('up\\n');
         process.stdin.on('data', () => {
           const c = spawn(process.execPath, ['-e', ${JSON.stringify(child)}], { stdio: ['ignore', 'pipe', 'inherit'] });
           let out = '';
           c.stdout.on('data', (b) => (out += b));
           c.on('exit', () => process.stdout.write(out));
         });`,
      ],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    const next = () =>
      new Promise<string>((resolve) => server.stdout.once('data', (b: Buffer) => resolve(b.toString())));
    try {
      await next();
      const pid = server.pid as number;
      expect(processTree(pid)).toEqual([pid]);
      const cost = await measureServer(pid, async () => {
        const reply = next();
        server.stdin.write('go\n');
        return Number(await reply);
      });
      expect(cost.peakBytes - cost.baseBytes).toBeGreaterThan(96 << 20);
      // clock ticks are 10 ms: the child's own figure, rounded down, is in the server's
      expect(cost.cpuMs).toBeGreaterThanOrEqual(cost.result - 20);
      expect(cost.result).toBeGreaterThan(20);
      expect(processTree(pid)).toEqual([pid]);
    } finally {
      server.kill();
    }
  });
});
