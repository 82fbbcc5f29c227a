/**
 * A number as a small integer where it fits one (31 bits). Numbers decoded from headers or read
 * from a Float64Array may come as doubles; an object field that holds both representations
 * changes shape, and V8 then migrates every object and drops the code optimized for the old one
 * (the delta search's, among others).
 */
export function asSmallInteger(n: number): number {
  return n <= 0x3fffffff ? n | 0 : n;
}
