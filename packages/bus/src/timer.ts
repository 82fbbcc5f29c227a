/** Timers of the bus never keep a process alive (Node's `unref`; browsers have no such thing). */
export function unref(timer: unknown): void {
  const t = timer as { unref?: () => void } | undefined;
  if (t !== undefined && t !== null && typeof t.unref === 'function') t.unref();
}
