/**
 * Reports messages dropped because of what a peer sent (too large, unknown target, hop limit,
 * channel backlog full) without letting a peer flood the log: one by one up to REPORTS per WINDOW
 * ms, then counted, and the count reported once the window is over (BusError
 * `BUS_REPORTS_SUPPRESSED`), or when the bus closes.
 */
import { BusError } from './errors.js';
import { unref } from './timer.js';

const REPORTS = 20;
const WINDOW = 1000;

export class DropReporter {
  /** Reports in the current window, those left unreported, and the window's start. */
  private reports = 0;
  private suppressed = 0;
  private windowAt = Number.NEGATIVE_INFINITY;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly reportError: (error: unknown) => void) {}

  report(error: BusError): void {
    const now = performance.now();
    if (now - this.windowAt >= WINDOW) {
      this.windowAt = now;
      this.reports = 0;
    }
    if (this.reports < REPORTS) {
      this.reports++;
      this.reportError(error);
      return;
    }
    if (this.suppressed++ === 0) {
      this.timer = setTimeout(() => this.reportSuppressed(), this.windowAt + WINDOW - now);
      unref(this.timer);
    }
  }

  /** Reports what is still counted, at once (the bus is closing). */
  close(): void {
    if (this.timer === undefined) return;
    clearTimeout(this.timer);
    this.reportSuppressed();
  }

  private reportSuppressed(): void {
    const count = this.suppressed;
    this.suppressed = 0;
    this.timer = undefined;
    if (count === 0) return;
    this.reportError(
      new BusError('BUS_REPORTS_SUPPRESSED', `${count} more dropped messages were not reported one by one`, {
        data: { count },
      }),
    );
  }
}
