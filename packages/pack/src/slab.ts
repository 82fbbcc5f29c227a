/**
 * Slab allocation for many small, short-lived byte arrays (inflated objects, delta results): one
 * ArrayBuffer per object costs more in allocation and GC than the work that fills it. Requests up
 * to an eighth of a slab are carved from the current slab (8-byte aligned); larger ones get their
 * own array. The views share memory, so whoever keeps one beyond the next allocations copies it.
 */
export const SLAB_SIZE = 1 << 20;

/** An allocator over slabs made by `makeSlab` (which may skip zero-filling when every byte is overwritten). */
export function slabAllocator(makeSlab: (size: number) => Uint8Array): (size: number) => Uint8Array {
  let slab: Uint8Array = new Uint8Array(0);
  let used = 0;
  return (size) => {
    if (size > SLAB_SIZE / 8) return new Uint8Array(size);
    if (used + size > slab.length) {
      slab = makeSlab(SLAB_SIZE);
      used = 0;
    }
    const out = slab.subarray(used, used + size);
    used += (size + 7) & ~7;
    return out;
  };
}
