/**
 * gitport in real Chromium: two Web Workers with their own repositories (the host's in
 * lightning-fs, the client's in OPFS), joined by a MessageChannel. The client clones, commits
 * with isomorphic-git and pushes; the main thread, on the bus with both, sees the ref-update
 * signal and reads the new ref through the comlink control API.
 */
import { createBus, workerEndpoint } from '@gitport/bus';
import { control, REF_UPDATE_EVENT, type RefUpdateEvent } from 'gitport';
import { expect, it } from 'vitest';

it('two Web Workers: one hosts, the other clones, commits and pushes; the main thread sees the ref update', async () => {
  const run = Date.now().toString(36);
  const hostWorker = new Worker(new URL('./git-host.worker.ts', import.meta.url), { type: 'module', name: run });
  const clientWorker = new Worker(new URL('./git-client.worker.ts', import.meta.url), { type: 'module', name: run });
  const main = createBus({ id: 'main' });
  try {
    await main.connect(workerEndpoint(hostWorker));
    await main.connect(workerEndpoint(clientWorker));
    const channel = new MessageChannel();
    hostWorker.postMessage({ type: 'port', port: channel.port1 }, [channel.port1]);
    clientWorker.postMessage({ type: 'port', port: channel.port2 }, [channel.port2]);

    const initial = await main.request<string>('host', 'setup', null);
    const updates: RefUpdateEvent[] = [];
    const signalled = new Promise<RefUpdateEvent>((resolve) =>
      main.on(REF_UPDATE_EVENT, (payload) => {
        updates.push(payload as RefUpdateEvent);
        resolve(payload as RefUpdateEvent);
      }),
    );
    const outcome = await main.request<{
      base: string;
      readme: string;
      commit: string;
      ok: boolean;
      phases: string[];
      isoHead: string;
      isoFile: string;
    }>('client', 'scenario', { peer: 'host', name: 'notes' }, { timeout: 120_000 });

    expect(outcome.base).toBe(initial);
    expect(outcome.readme).toBe('hello from the host worker\n');
    expect(outcome.ok).toBe(true);
    expect(outcome.phases).toContain('checkout');
    expect(await signalled).toEqual({ repo: 'notes', ref: 'refs/heads/main', old: initial, new: outcome.commit });
    expect(updates).toHaveLength(1);
    expect(outcome.isoHead).toBe(outcome.commit);
    expect(outcome.isoFile).toBe('written in the client worker\n');

    const api = control(main, 'host');
    expect(await api.list()).toEqual(['notes']);
    expect(await api.refs('notes')).toEqual({
      head: { kind: 'symbolic', target: 'refs/heads/main' },
      refs: [{ name: 'refs/heads/main', oid: outcome.commit }],
    });
  } finally {
    main.close();
    hostWorker.terminate();
    clientWorker.terminate();
  }
});
