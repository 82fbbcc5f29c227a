/**
 * The transport windows of the streams a gateway opens to its workers, sized by how many run at
 * once. A response (a pack) runs at most a window ahead of the socket. While one stream runs by
 * itself, a small window makes its worker hand over the core often, so a client indexing the
 * pack on the same machine keeps getting bytes. While several run, one worker takes turns
 * between them, and each stream's window must cover the time its worker spends on the others:
 * every open stream is widened then, and new ones open wide. A widened stream stays wide.
 */
import type { DuplexStream } from '@gitport/transport';

export class StreamWindows {
  readonly #solo: number;
  readonly #shared: number;
  readonly #open = new Set<DuplexStream>();
  /** Streams asked for and not yet opened (or failed to open). */
  #opening = 0;

  /** `solo` applies while a stream is the only one (at most `shared`), `shared` otherwise. */
  constructor(solo: number, shared: number) {
    this.#shared = shared;
    this.#solo = Math.min(solo, shared);
  }

  /** The window for a stream about to open; follow with `opened` or `notOpened`. */
  reserve(): number {
    const alone = this.#open.size + this.#opening === 0;
    this.#opening++;
    if (alone) return this.#solo;
    this.#widenAll();
    return this.#shared;
  }

  /** A reserved stream opened: it counts until it closes, cleanly or not. */
  opened(stream: DuplexStream): void {
    this.#opening--;
    this.#open.add(stream);
    if (this.#open.size + this.#opening > 1) this.#widenAll();
    const forget = () => void this.#open.delete(stream);
    stream.closed.then(forget, forget);
  }

  /** A reserved stream failed to open. */
  notOpened(): void {
    this.#opening--;
  }

  /** Streams open now (for tests and monitoring). */
  get open(): number {
    return this.#open.size;
  }

  #widenAll(): void {
    for (const stream of this.#open) stream.widenWindow(this.#shared);
  }
}
