/** Handler results that move some of their parts to the requester instead of copying them. */

/** A handler result that transfers (rather than copies) some of its parts. */
export class Transferring<T = unknown> {
  constructor(
    readonly value: T,
    readonly transfer: Transferable[],
  ) {}
}

/** Wraps a handler's result so that `transfer` is moved to the requester instead of copied. */
export function withTransfer<T>(value: T, transfer: Transferable[]): Transferring<T> {
  return new Transferring(value, transfer);
}
