/**
 * zlib inflate (RFC 1950 around RFC 1951) for the web path, written for what a pack needs and
 * general-purpose libraries do not say: where a stream ends in input that goes on with the next
 * entry (the bytes it used), continued across input pieces without inflating again from the
 * start, into output whose size the pack header declares.
 *
 * ```
 * zlib   = CMF FLG *block ADLER32           CMF: method 8, window <= 32 KiB; FLG: no dictionary
 * block  = BFINAL(1) BTYPE(2) data          BTYPE 0 stored, 1 fixed codes, 2 dynamic codes
 * stored = align LEN(16) NLEN(16) LEN*byte
 * codes  = *(literal | length distance) end-of-block
 * ```
 * https://www.rfc-editor.org/rfc/rfc1951 and https://www.rfc-editor.org/rfc/rfc1950
 *
 * Decoding is table-driven: a table indexed by the next `maxBits` input bits (LSB first, as
 * deflate packs its codes) gives what the code means with its length (`value << 8 | op << 4 |
 * length`: a literal, a length or distance base with its extra bits, the end of the block); a
 * length of 0 marks bits no code starts with. Bits are read from the input at a bit position,
 * four bytes at a time; bytes past the end read as 0, and a symbol that used bits past the end is
 * undone: the decoder keeps the bytes from that symbol on and asks for more input. Code sets are checked as zlib checks
 * them (over-subscribed, incomplete), and so are distances, lengths and the Adler-32 trailer, so
 * corrupt input fails as zlib fails.
 */

/** Why an inflate stops: the stream is corrupt, or the output would pass its limit. */
export class InflateError extends Error {
  readonly kind: 'corrupt' | 'limit';
  constructor(kind: 'corrupt' | 'limit', message: string) {
    super(message);
    this.kind = kind;
  }
}

/** What to do when the output is full: grow it, hand it out (keeping the window), or fail. */
export type OutputMode = 'exact' | 'grow' | 'window';

/** Where the decoder stands: before the zlib header, a block header, in codes, in stored bytes, before the trailer, done. */
const HEADER = 0;
const BLOCK = 1;
const CODES = 2;
const STORED = 3;
const TRAILER = 4;
const DONE = 5;

/** Bit-reversed 15-bit values, to index tables by the input's LSB-first bits. */
let reversed: Uint16Array | undefined;
function reverseTable(): Uint16Array {
  const t = new Uint16Array(32768);
  for (let i = 0; i < 32768; i++) {
    let x = ((i & 0xaaaa) >> 1) | ((i & 0x5555) << 1);
    x = ((x & 0xcccc) >> 2) | ((x & 0x3333) << 2);
    x = ((x & 0xf0f0) >> 4) | ((x & 0x0f0f) << 4);
    t[i] = (((x & 0xff00) >> 8) | ((x & 0x00ff) << 8)) >> 1;
  }
  return t;
}

/** What a table entry's op says (bits 4-7): 0-5 are a length's extra bits, 0-13 a distance's. */
const OP_LITERAL = 8;
const OP_END = 9;
const OP_INVALID = 15;
/** The entry of bits no code starts with (length 0): invalid as a literal/length or a distance. */
const NO_CODE = OP_INVALID << 4;

/** Each symbol's table entry but its code length, for the literal/length, distance and code-length codes. */
const litEntries = new Int32Array(288);
const distEntries = new Int32Array(32);
const codeEntries = new Int32Array(19);
for (let sym = 0; sym < 256; sym++) litEntries[sym] = (sym << 8) | (OP_LITERAL << 4);
litEntries[256] = OP_END << 4;
// RFC 1951 3.2.5: length symbols 257..284 and distances 0..29 go up in groups of four (two)
// codes with one more extra bit each group, from base 3 (1); symbol 285 is length 258
for (let i = 0, base = 3; i < 28; i++) {
  const extra = i < 8 ? 0 : (i >>> 2) - 1;
  litEntries[257 + i] = (base << 8) | (extra << 4);
  base += 1 << extra;
}
litEntries[285] = 258 << 8;
litEntries[286] = litEntries[287] = OP_INVALID << 4;
for (let i = 0, base = 1; i < 30; i++) {
  const extra = i < 4 ? 0 : (i >>> 1) - 1;
  distEntries[i] = (base << 8) | (extra << 4);
  base += 1 << extra;
}
distEntries[30] = distEntries[31] = OP_INVALID << 4;
for (let sym = 0; sym < 19; sym++) codeEntries[sym] = sym << 4;

/** The order in which a dynamic block sends the code lengths of the code-length code. */
const codeLengthOrder = new Uint8Array([16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]);

/**
 * `buildTable`'s counts of codes by length, and where each length's symbols go in `tableSorted`
 * (builds never overlap).
 */
const tableCount = new Uint16Array(16);
const tableNext = new Uint16Array(16);
/** `buildTable`'s symbols in canonical code order: at most 288 (the fixed literal/length code). */
const tableSorted = new Uint16Array(288);

/**
 * Fills `table` (1 << maxBits entries, `entries[symbol] | length` each) for the code lengths
 * `lengths[0..n)`; returns maxBits, or -1 for a set zlib refuses: over-subscribed, or incomplete
 * unless it is one code of one bit (`complete`: not even that, as for the code-length code). No
 * code at all gives a table of invalid entries, as zlib's does.
 */
function buildTable(lengths: Uint8Array, n: number, table: Int32Array, entries: Int32Array, complete = false): number {
  const count = tableCount.fill(0);
  for (let i = 0; i < n; i++) count[lengths[i]!]!++;
  let maxBits = 15;
  while (maxBits > 0 && count[maxBits] === 0) maxBits--;
  if (maxBits === 0) {
    table[0] = table[1] = NO_CODE;
    return 1;
  }
  let left = 1;
  for (let len = 1; len <= 15; len++) {
    left = (left << 1) - count[len]!;
    if (left < 0) return -1;
  }
  if (left > 0 && (complete || maxBits !== 1)) return -1;
  // the codes in canonical order (by length, then symbol: RFC 1951 3.2.2), each written once
  // into a table of its own length's bits, which is then doubled for the next length by a copy:
  // input bits past a code's length do not change what it decodes to
  const next = tableNext;
  next[1] = 0;
  for (let len = 1; len < 15; len++) next[len + 1] = next[len]! + count[len]!;
  const sorted = tableSorted;
  for (let sym = 0; sym < n; sym++) {
    const len = lengths[sym]!;
    if (len !== 0) sorted[next[len]!++] = sym;
  }
  const rev = (reversed ??= reverseTable());
  // only the one-code case leaves entries no code fills
  if (left > 0) table[0] = table[1] = NO_CODE;
  for (let len = 1, k = 0, code = 0, size = 2; ; len++, size <<= 1, code <<= 1) {
    for (let c = count[len]!; c > 0; c--, k++, code++) table[rev[code << (15 - len)]!] = entries[sorted[k]!]! | len;
    if (len === maxBits) break;
    table.copyWithin(size, 0, size);
  }
  return maxBits;
}

/** A dynamic block header's code lengths and code-length code table (headers are read one at a time). */
const headerLengths = new Uint8Array(320);
const headerCodes = new Int32Array(128);

let fixedLit: Int32Array | undefined;
let fixedDist: Int32Array | undefined;
function fixedTables(): void {
  const lengths = new Uint8Array(288);
  lengths.fill(8, 0, 144).fill(9, 144, 256).fill(7, 256, 280).fill(8, 280, 288);
  fixedLit = new Int32Array(512);
  buildTable(lengths, 288, fixedLit, litEntries);
  // 32 codes of 5 bits, the last two invalid as distances (the decoder refuses symbols past 29)
  fixedDist = new Int32Array(32);
  buildTable(lengths.fill(5, 0, 32), 32, fixedDist, distEntries);
}

/**
 * Adler-32 of `data[start..end)` continuing `adler` (RFC 1950). Eight bytes a step (`b` gains
 * eight times `a` plus the bytes weighted 8..1), reduced every 3800 bytes: `b` stays below
 * 2^31, in V8's integer arithmetic (zlib's 5552 would let it reach 2^32).
 */
export function adler32(data: Uint8Array, start: number, end: number, adler = 1): number {
  let a = adler & 0xffff;
  let b = adler >>> 16;
  for (let i = start; i < end; ) {
    const stop = Math.min(end, i + 3800);
    for (const stop8 = stop - ((stop - i) & 7); i < stop8; i += 8) {
      const x0 = data[i]!;
      const x1 = data[i + 1]!;
      const x2 = data[i + 2]!;
      const x3 = data[i + 3]!;
      const x4 = data[i + 4]!;
      const x5 = data[i + 5]!;
      const x6 = data[i + 6]!;
      const x7 = data[i + 7]!;
      b += 8 * a + 8 * x0 + 7 * x1 + 6 * x2 + 5 * x3 + 4 * x4 + 3 * x5 + 2 * x6 + x7;
      a += x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
    }
    for (; i < stop; i++) {
      a += data[i]!;
      b += a;
    }
    a %= 65521;
    b %= 65521;
  }
  return ((b << 16) | a) >>> 0;
}

/**
 * One zlib stream, fed input piece by piece (`run`), inflating into `out`. The caller sets the
 * output (`reset`) and reads where the stream ended (`consumed`) once `done`.
 */
export class Inflater {
  out: Uint8Array = new Uint8Array(0);
  /** Bytes written to `out`. */
  written = 0;
  /** The most output allowed in all (`exact`, `grow`); what passes it is an error. */
  limit = 0;
  outputMode: OutputMode = 'exact';
  /** `window` mode: where the bytes not yet handed out begin, and who takes them. */
  handedOut = 0;
  onData: ((chunk: Uint8Array) => void) | undefined;
  /** After `done`: the bytes of the last piece the stream used. */
  consumed = 0;
  /** Output of earlier windows (`window` mode), for the Adler-32. */
  #adler = 1;
  #mode: number = HEADER;
  #final = 0;
  /** Bytes of earlier pieces not used yet (a symbol cut by the end of a piece), and the bit in the first. */
  #pending: Uint8Array | undefined;
  #bit = 0;
  #storedLeft = 0;
  readonly #lit = new Int32Array(32768);
  readonly #dist = new Int32Array(32768);
  #litTable: Int32Array = this.#lit;
  #distTable: Int32Array = this.#dist;
  #litBits = 0;
  #distBits = 0;

  get done(): boolean {
    return this.#mode === DONE;
  }

  reset(out: Uint8Array, limit: number, outputMode: OutputMode): void {
    this.out = out;
    this.written = 0;
    this.limit = limit;
    this.outputMode = outputMode;
    this.handedOut = 0;
    this.consumed = 0;
    this.#adler = 1;
    this.#mode = HEADER;
    this.#final = 0;
    this.#pending = undefined;
    this.#bit = 0;
  }

  /** Lets go of the output and input it holds (the context is kept for another stream). */
  release(): void {
    this.out = new Uint8Array(0);
    this.#pending = undefined;
    this.onData = undefined;
  }

  /**
   * Inflates from `input` on; true once the stream (trailer included) ended, with `consumed`
   * set; false when all of `input` is used and the stream goes on. Throws InflateError.
   */
  run(input: Uint8Array): boolean {
    if (this.#mode === DONE) return true;
    let dat = input;
    let base = 0;
    const pending = this.#pending;
    if (pending !== undefined) {
      dat = new Uint8Array(pending.length + input.length);
      dat.set(pending);
      dat.set(input, pending.length);
      base = pending.length;
      this.#pending = undefined;
    }
    const end = this.#inflate(dat, this.#bit);
    if (end < 0) {
      // `~end` is the bit where decoding stopped: keep the bytes from there for the next piece
      // (none when it stopped at the end of the input, as a stored block or a window hand-out
      // does: the next piece is then decoded as it is, not copied)
      const stop = ~end;
      this.#pending = stop >>> 3 < dat.length ? dat.slice(stop >>> 3) : undefined;
      this.#bit = stop & 7;
      return false;
    }
    this.consumed = Math.max(0, end - base);
    return true;
  }

  /** Makes room for `need` more output bytes at `written`, per the output mode; returns the output. */
  #room(need: number): Uint8Array {
    const bt = this.written;
    if (this.outputMode === 'window') {
      const out = this.out;
      this.#emit(bt);
      const keep = Math.min(bt, 32768);
      out.copyWithin(0, bt - keep, bt);
      this.written = this.handedOut = keep;
      if (keep + need > out.length) throw new InflateError('corrupt', 'zlib: output window too small');
      return out;
    }
    if (bt + need > this.limit || this.outputMode === 'exact') {
      throw new InflateError('limit', `inflated data exceeds ${this.limit} bytes`);
    }
    const grown = new Uint8Array(Math.min(this.limit, Math.max(this.out.length * 2, bt + need, 256)));
    grown.set(this.out.subarray(0, bt));
    this.out = grown;
    return grown;
  }

  /** `window` mode: hands out (a copy of) the output from `handedOut` to `to`, adding it to the Adler-32. */
  #emit(to: number): void {
    const from = this.handedOut;
    if (to <= from) return;
    this.#adler = adler32(this.out, from, to, this.#adler);
    this.handedOut = to;
    this.onData?.(this.out.slice(from, to));
  }

  /** Decodes `dat` from bit `pos`; the byte after the stream, or `~bit` where it needs more input. */
  #inflate(dat: Uint8Array, start: number): number {
    let pos = start;
    const totalBits = dat.length * 8;
    for (;;) {
      switch (this.#mode) {
        case HEADER: {
          if (totalBits - pos < 16) return ~pos;
          const at = pos >>> 3;
          const cmf = dat[at]!;
          const flg = dat[at + 1]!;
          if ((cmf & 15) !== 8) throw new InflateError('corrupt', 'zlib: unknown compression method');
          if (cmf >>> 4 > 7) throw new InflateError('corrupt', 'zlib: invalid window size');
          if (((cmf << 8) | flg) % 31 !== 0) throw new InflateError('corrupt', 'zlib: incorrect header check');
          if (flg & 32) throw new InflateError('corrupt', 'zlib: a preset dictionary is not supported');
          pos += 16;
          this.#mode = BLOCK;
          break;
        }
        case BLOCK: {
          if (this.#final) {
            this.#mode = TRAILER;
            break;
          }
          const next = this.#blockHeader(dat, pos, totalBits);
          if (next < 0) return ~pos;
          pos = next;
          break;
        }
        case STORED: {
          const at = pos >>> 3;
          const n = Math.min(this.#storedLeft, dat.length - at);
          let out = this.out;
          if (this.written + n > out.length) {
            if (this.outputMode === 'window') {
              // in pieces no larger than the window's free part
              let done = 0;
              while (done < n) {
                if (this.written === out.length) out = this.#room(1);
                const k = Math.min(n - done, out.length - this.written);
                out.set(dat.subarray(at + done, at + done + k), this.written);
                this.written += k;
                done += k;
              }
            } else {
              out = this.#room(n);
              out.set(dat.subarray(at, at + n), this.written);
              this.written += n;
            }
          } else {
            out.set(dat.subarray(at, at + n), this.written);
            this.written += n;
          }
          this.#storedLeft -= n;
          pos = (at + n) * 8;
          if (this.#storedLeft > 0) return ~pos;
          this.#mode = BLOCK;
          break;
        }
        case CODES: {
          const stop = this.#codes(dat, pos, totalBits);
          if (stop < 0) return stop;
          pos = stop;
          this.#mode = BLOCK;
          break;
        }
        case TRAILER: {
          const at = (pos + 7) >>> 3;
          if (dat.length - at < 4) return ~pos;
          const expected = ((dat[at]! << 24) | (dat[at + 1]! << 16) | (dat[at + 2]! << 8) | dat[at + 3]!) >>> 0;
          let adler: number;
          if (this.outputMode === 'window') {
            this.#emit(this.written);
            adler = this.#adler;
          } else {
            adler = adler32(this.out, 0, this.written);
          }
          if (adler !== expected) throw new InflateError('corrupt', 'zlib: incorrect data check');
          this.#mode = DONE;
          return at + 4;
        }
        default:
          return pos >>> 3;
      }
    }
  }

  /** Reads a block header (with a dynamic block's code lengths); the bit after it, or -1 for more input. */
  #blockHeader(dat: Uint8Array, start: number, totalBits: number): number {
    let pos = start;
    if (totalBits - pos < 3) return -1;
    const head = bits(dat, pos, 7);
    pos += 3;
    const final = head & 1;
    const type = head >>> 1;
    if (type === 0) {
      const at = (pos + 7) >>> 3;
      if (dat.length - at < 4) return -1;
      const len = dat[at]! | (dat[at + 1]! << 8);
      const nlen = dat[at + 2]! | (dat[at + 3]! << 8);
      if (len !== (~nlen & 0xffff)) throw new InflateError('corrupt', 'zlib: invalid stored block lengths');
      this.#storedLeft = len;
      this.#final = final;
      this.#mode = STORED;
      return (at + 4) * 8;
    }
    if (type === 1) {
      if (!fixedLit) fixedTables();
      this.#litTable = fixedLit!;
      this.#distTable = fixedDist!;
      this.#litBits = 9;
      this.#distBits = 5;
      this.#final = final;
      this.#mode = CODES;
      return pos;
    }
    if (type === 3) throw new InflateError('corrupt', 'zlib: invalid block type');
    if (totalBits - pos < 14) return -1;
    const nlit = bits(dat, pos, 31) + 257;
    const ndist = bits(dat, pos + 5, 31) + 1;
    const ncode = bits(dat, pos + 10, 15) + 4;
    pos += 14;
    if (nlit > 286 || ndist > 30) throw new InflateError('corrupt', 'zlib: too many length or distance symbols');
    if (totalBits - pos < ncode * 3) return -1;
    const lengths = headerLengths.fill(0);
    for (let i = 0; i < ncode; i++) lengths[codeLengthOrder[i]!] = bits(dat, pos + i * 3, 7);
    pos += ncode * 3;
    const codeTable = headerCodes;
    const codeBits = buildTable(lengths, 19, codeTable, codeEntries, true);
    if (codeBits < 0) throw new InflateError('corrupt', 'zlib: invalid code lengths set');
    const codeMask = (1 << codeBits) - 1;
    lengths.fill(0, 0, 19);
    const total = nlit + ndist;
    for (let i = 0; i < total; ) {
      const c = codeTable[bits16(dat, pos) & codeMask]!;
      if ((c & 15) === 0) {
        if (pos + codeBits > totalBits) return -1;
        throw new InflateError('corrupt', 'zlib: invalid code lengths set');
      }
      pos += c & 15;
      // a code read past the input's end is not yet a symbol: wait for more input before judging
      if (pos > totalBits) return -1;
      const sym = c >>> 4;
      if (sym < 16) {
        lengths[i++] = sym;
        continue;
      }
      let repeat: number;
      let value = 0;
      if (sym === 16) {
        if (i === 0) throw new InflateError('corrupt', 'zlib: invalid bit length repeat');
        value = lengths[i - 1]!;
        repeat = 3 + bits(dat, pos, 3);
        pos += 2;
      } else if (sym === 17) {
        repeat = 3 + bits(dat, pos, 7);
        pos += 3;
      } else {
        repeat = 11 + bits(dat, pos, 127);
        pos += 7;
      }
      if (pos > totalBits) return -1;
      if (i + repeat > total) throw new InflateError('corrupt', 'zlib: invalid bit length repeat');
      lengths.fill(value, i, i + repeat);
      i += repeat;
    }
    if (pos > totalBits) return -1;
    if (lengths[256] === 0) throw new InflateError('corrupt', 'zlib: invalid code -- missing end-of-block');
    this.#litBits = buildTable(lengths, nlit, this.#lit, litEntries);
    if (this.#litBits < 0) throw new InflateError('corrupt', 'zlib: invalid literal/lengths set');
    this.#distBits = buildTable(lengths.subarray(nlit), ndist, this.#dist, distEntries);
    if (this.#distBits < 0) throw new InflateError('corrupt', 'zlib: invalid distances set');
    this.#litTable = this.#lit;
    this.#distTable = this.#dist;
    this.#final = final;
    this.#mode = CODES;
    return pos;
  }

  /** Decodes a block's codes from bit `start`: the bit after its end-of-block, or `~bit` of the symbol cut short. */
  #codes(dat: Uint8Array, start: number, totalBits: number): number {
    const lit = this.#litTable;
    const dist = this.#distTable;
    const litBits = this.#litBits;
    const distBits = this.#distBits;
    const litMask = (1 << litBits) - 1;
    const distMask = (1 << distBits) - 1;
    // bits are read four bytes at a time: through a DataView up to the input's last four bytes,
    // byte by byte (bytes past the end as 0) after
    const view = new DataView(dat.buffer, dat.byteOffset, dat.byteLength);
    const viewEnd = (dat.length - 4) * 8;
    let out = this.out;
    let olen = out.length;
    let outView = new DataView(out.buffer, out.byteOffset, olen);
    let bt = this.written;
    let pos = start;
    for (;;) {
      const from = pos;
      // 25 bits at least: a literal/length code and its extra bits (20 at most)
      let v = pos < viewEnd ? view.getUint32(pos >>> 3, true) >>> (pos & 7) : word(dat, pos);
      const c = lit[v & litMask]!;
      const len = c & 15;
      pos += len;
      // a code read past the input's end is not yet a symbol: wait for more input before judging
      if (pos > totalBits || (len === 0 && from + litBits > totalBits)) {
        this.written = bt;
        return ~from;
      }
      const op = (c >>> 4) & 15;
      if (op === OP_LITERAL) {
        if (bt >= olen) {
          this.written = bt;
          out = this.#room(1);
          olen = out.length;
          outView = new DataView(out.buffer, out.byteOffset, olen);
          bt = this.written;
        }
        out[bt++] = c >>> 8;
        continue;
      }
      if (op === OP_INVALID) throw new InflateError('corrupt', 'zlib: invalid literal/length code');
      if (op === OP_END) {
        this.written = bt;
        return pos;
      }
      let length = c >>> 8;
      if (op) {
        length += (v >>> len) & ((1 << op) - 1);
        pos += op;
      }
      v = pos < viewEnd ? view.getUint32(pos >>> 3, true) >>> (pos & 7) : word(dat, pos);
      const d = dist[v & distMask]!;
      const dlen = d & 15;
      if (dlen === 0) {
        if (pos + distBits > totalBits) {
          this.written = bt;
          return ~from;
        }
        throw new InflateError('corrupt', 'zlib: invalid distance code');
      }
      pos += dlen;
      if (pos > totalBits) {
        this.written = bt;
        return ~from;
      }
      const dx = (d >>> 4) & 15;
      if (dx === OP_INVALID) throw new InflateError('corrupt', 'zlib: invalid distance code');
      let distance = d >>> 8;
      if (dx) {
        // a distance code and its extra bits take up to 28 bits: read again past 25
        if (dlen + dx > 25) v = pos < viewEnd ? view.getUint32(pos >>> 3, true) >>> (pos & 7) : word(dat, pos);
        else v >>>= dlen;
        distance += v & ((1 << dx) - 1);
        pos += dx;
        if (pos > totalBits) {
          this.written = bt;
          return ~from;
        }
      }
      if (distance > bt) throw new InflateError('corrupt', 'zlib: invalid distance too far back');
      const end = bt + length;
      if (end > olen) {
        this.written = bt;
        out = this.#room(length);
        olen = out.length;
        outView = new DataView(out.buffer, out.byteOffset, olen);
        bt = this.written;
      } else if (distance >= 4 && length <= 32 && end + 3 < olen) {
        // four bytes a step: each reads bytes already final (four or more back), and the last
        // may write up to three bytes past the match, in output not yet written
        for (let from = bt - distance; bt < end; bt += 4, from += 4) {
          outView.setInt32(bt, outView.getInt32(from, true), true);
        }
        bt = end;
        continue;
      }
      bt = copyMatch(out, bt, distance, length);
    }
  }
}

/** Copies a match of `length` bytes from `distance` back to `bt` in `out`; the position after it. */
function copyMatch(out: Uint8Array, bt: number, distance: number, length: number): number {
  const end = bt + length;
  if (distance >= length && length > 32) {
    out.copyWithin(bt, bt - distance, end - distance);
    return end;
  }
  for (; bt < end; bt++) out[bt] = out[bt - distance]!;
  return end;
}

/** `mask`ed bits at bit `pos` (up to 9 bits: two bytes). */
function bits(d: Uint8Array, pos: number, mask: number): number {
  const at = pos >>> 3;
  return ((d[at]! | (d[at + 1]! << 8)) >>> (pos & 7)) & mask;
}

/** At least 17 bits at bit `pos` (three bytes), unmasked. */
function bits16(d: Uint8Array, pos: number): number {
  const at = pos >>> 3;
  return (d[at]! | (d[at + 1]! << 8) | (d[at + 2]! << 16)) >>> (pos & 7);
}

/** At least 25 bits at bit `pos` (four bytes; bytes past the end read as 0), unmasked. */
function word(d: Uint8Array, pos: number): number {
  const at = pos >>> 3;
  return (d[at]! | (d[at + 1]! << 8) | (d[at + 2]! << 16) | (d[at + 3]! << 24)) >>> (pos & 7);
}
