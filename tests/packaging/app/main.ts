/**
 * The page: starts a worker that hosts a repository and a worker that clones it, and hands each
 * one end of a MessageChannel. What the client worker reports goes into `#result`. Opened as
 * `?remote=<repository URL>&token=<push token>`, it also starts a worker that clones and pushes
 * through a gitport gateway over HTTP, and shows its report in `#http-result`.
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

const params = new URLSearchParams(location.search);
const remoteUrl = params.get('remote');
if (remoteUrl) {
  const httpWorker = new Worker(new URL('./http.worker.ts', import.meta.url), { type: 'module' });
  const httpResult = document.querySelector('#http-result') as HTMLElement;
  httpWorker.onmessage = (event: MessageEvent<unknown>) => {
    httpResult.textContent = JSON.stringify(event.data);
  };
  httpWorker.postMessage({ url: remoteUrl, token: params.get('token') ?? '' });
}
