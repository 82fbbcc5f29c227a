/**
 * The `ref-prefix` filter of v2 `ls-refs` (gitprotocol-v2(5)): a ref is listed when one of the
 * prefixes is a prefix of its name; no prefixes list every ref.
 *
 *   ref-prefix <prefix>   "When specified, only references having a prefix matching one of the
 *                          provided prefixes are displayed."
 *
 * git's ls-refs.c stores at most 65,535 prefixes; from the 65,536th on it forgets them all and
 * lists every ref ("as soon as we have any prefix, they are meant to form a comprehensive list").
 *
 * Matching one name against every prefix costs refs times prefixes. Here the prefixes are sorted
 * once and those that start with a shorter kept prefix are dropped (they select nothing more).
 * In what is left no prefix starts another, so the only one that can start a name is the
 * greatest that sorts at or before it (any prefix between it and the name would start with it),
 * found by binary search.
 */

/** From this many `ref-prefix` lines on, git ignores them all and lists every ref. */
export const TOO_MANY_PREFIXES = 65_536;

/** A test for "some prefix starts `name`"; every name passes when `prefixes` is empty. */
export function prefixMatcher(prefixes: readonly string[]): (name: string) => boolean {
  if (prefixes.length === 0) return () => true;
  const sorted = [...prefixes].sort(compare);
  const kept: string[] = [];
  for (const p of sorted) {
    const last = kept[kept.length - 1];
    if (last === undefined || !p.startsWith(last)) kept.push(p);
  }
  if (kept[0] === '') return () => true;
  return (name) => {
    let lo = 0;
    let hi = kept.length - 1;
    let at = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if ((kept[mid] as string) <= name) {
        at = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return at >= 0 && name.startsWith(kept[at] as string);
  };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
