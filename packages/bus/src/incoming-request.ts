/** A request a peer made of one of our handlers, while its handler runs: the handler's `meta`. */
import type { HandlerMeta } from './bus-types.js';
import type { BusError } from './errors.js';

export class IncomingRequest implements HandlerMeta {
  private controller: AbortController | undefined;
  private abortReason: BusError | undefined;
  constructor(readonly from: string) {}
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.abortReason !== undefined) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }
  abort(reason: BusError): void {
    if (this.abortReason !== undefined) return;
    this.abortReason = reason;
    this.controller?.abort(reason);
  }
}
