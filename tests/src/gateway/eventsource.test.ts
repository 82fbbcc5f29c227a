/**
 * A real browser's EventSource (headless Chromium) against the gateway: it receives the
 * ref-update of a real git push, and after the server ends its stream it reconnects by itself
 * with Last-Event-ID and gets exactly the events it missed.
 */
import { join } from 'node:path';
import { createGitSandbox } from '@gitport/test-helpers/git';
import { chromium } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { backends, startServer } from './server.js';

const TOKEN = 'browser-token';

describe('EventSource in Chromium', () => {
  it('gets pushes live and replays what it missed after a reconnect', async () => {
    await using sandbox = await createGitSandbox();
    await using server = await startServer({
      root: sandbox.path('root'),
      token: TOKEN,
      backend: backends[0],
      sse: { retryMs: 100 },
    });
    await sandbox.git(['init', '--quiet', '--bare', join(server.root, 'demo.git')]);
    const browser = await chromium.launch({
      executablePath: process.env.GITPORT_CHROMIUM ?? '/usr/bin/chromium',
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
    });
    try {
      const page = await browser.newPage();
      await page.goto(`${server.url}/healthz`);
      await page.evaluate(() => {
        const w = window as unknown as { events: { type: string; id: string; data: string }[]; opened: number };
        w.events = [];
        w.opened = 0;
        const source = new EventSource('/demo.git/events');
        source.onopen = () => w.opened++;
        for (const type of ['ref-update', 'reset']) {
          source.addEventListener(type, (e) => {
            const m = e as MessageEvent<string>;
            w.events.push({ type, id: m.lastEventId, data: m.data });
          });
        }
      });
      await page.waitForFunction(() => (window as unknown as { opened: number }).opened === 1);

      const work = sandbox.path('work');
      await sandbox.git(['init', '--quiet', work]);
      await sandbox.git(['-C', work, 'commit', '--quiet', '--allow-empty', '-m', 'first']);
      await sandbox.git([
        '-C',
        work,
        'push',
        '--quiet',
        `http://u:${TOKEN}@${server.host}:${server.port}/demo.git`,
        'HEAD:main',
      ]);
      const oid = await sandbox.git(['-C', work, 'rev-parse', 'HEAD']);
      await page.waitForFunction(() => (window as unknown as { events: unknown[] }).events.length === 1);

      // the server ends every stream and two updates happen before the browser is back
      const hub = server.gateway.hub;
      hub.disconnectAll();
      const missed = [
        hub.publish({ repo: 'demo', ref: 'refs/heads/a', old: '0'.repeat(40), new: oid }),
        hub.publish({ repo: 'demo', ref: 'refs/heads/b', old: '0'.repeat(40), new: oid }),
      ];
      await page.waitForFunction(() => (window as unknown as { events: unknown[] }).events.length >= 3);
      const events = await page.evaluate(
        () => (window as unknown as { events: { type: string; id: string; data: string }[] }).events,
      );
      expect(events.map((e) => e.type)).toEqual(['ref-update', 'ref-update', 'ref-update']);
      expect(JSON.parse(events[0]!.data)).toEqual({
        repo: 'demo',
        ref: 'refs/heads/main',
        old: '0'.repeat(40),
        new: oid,
      });
      expect(events.slice(1).map((e) => e.id)).toEqual(missed);
      expect(events.slice(1).map((e) => JSON.parse(e.data).ref)).toEqual(['refs/heads/a', 'refs/heads/b']);
      expect(await page.evaluate(() => (window as unknown as { opened: number }).opened)).toBe(2);
    } finally {
      await browser.close();
    }
  });
});
