/**
 * The page: starts a worker that hosts a repository and a worker that clones it, and hands each
 * one end of a MessageChannel. What the client worker reports goes into `#result`.
 */
const hostWorker = new Worker(new URL('./host.worker.ts', import.meta.url), { type: 'module' });
const clientWorker = new Worker(new URL('./client.worker.ts', import.meta.url), { type: 'module' });
const result = document.querySelector('#result') as HTMLElement;

const channel = new MessageChannel();
hostWorker.postMessage({ port: channel.port1 }, [channel.port1]);
clientWorker.postMessage({ port: channel.port2 }, [channel.port2]);

clientWorker.onmessage = (event: MessageEvent<unknown>) => {
  result.textContent = JSON.stringify(event.data);
};
for (const worker of [hostWorker, clientWorker]) {
  worker.onerror = (event) => {
    result.textContent = JSON.stringify({ ok: false, error: event.message });
  };
}
