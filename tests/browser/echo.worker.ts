/** A trivial module worker: answers every message with its double. */
self.addEventListener('message', (event: MessageEvent<number>) => {
  self.postMessage(event.data * 2);
});
