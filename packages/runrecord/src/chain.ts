// The chain: head₀ = H("sandbox.runrecord/1" ‖ unit_id ‖ grants_id); headₙ = H(headₙ₋₁ ‖ seg(segmentₙ)).
import { ByteWriter, bytesToHex, type Hex, hexToBytes, isAddr } from './bytes.js';
import { RunRecordError } from './errors.js';
import { blake3 } from './hash.js';
import { encodeSegmentInto } from './segment.js';
import { FORMAT, type SegmentBody } from './types.js';

const TAG = new TextEncoder().encode(FORMAT); // 19 ASCII bytes
/** Where a segment's bytes start in a cursor's buffer (after the 32-byte head). */
export const SEG = 32;

export function genesisBytes(unitId: Hex, grantsId: Hex): Uint8Array {
  if (!isAddr(unitId)) throw new RunRecordError('MalformedRecord', 'unit_id is not an address');
  if (!isAddr(grantsId)) throw new RunRecordError('MalformedRecord', 'grants_id is not an address');
  const w = new ByteWriter(19 + 64);
  w.bytes(TAG);
  w.addr(unitId);
  w.addr(grantsId);
  return blake3(w.take());
}

/** head₀ of a record of `unitId` under `grantsId`. */
export function genesisHead(unitId: Hex, grantsId: Hex): Hex {
  return bytesToHex(genesisBytes(unitId, grantsId));
}

/**
 * The running end of a chain: the current head in bytes, and a reusable buffer laid out as
 * `head ‖ seg` so that advancing costs one encode (or one copy, for byte input) and one hash.
 */
export class ChainCursor {
  private readonly w = new ByteWriter(256);

  constructor(head: Uint8Array) {
    this.w.bytes(head);
  }

  get headBytes(): Uint8Array {
    return this.w.buf.subarray(0, 32);
  }

  /** The buffer: head at 0, the segment last encoded or loaded at SEG. */
  get buf(): Uint8Array {
    return this.w.buf;
  }

  /** Where the segment at SEG ends. */
  get end(): number {
    return this.w.pos;
  }

  /** Encodes `body` at SEG; throws (unindexed) if it cannot be encoded. Does not advance. */
  encode(body: unknown): void {
    this.w.pos = SEG;
    encodeSegmentInto(this.w, body);
  }

  /** Copies canonical segment bytes to SEG. */
  load(seg: Uint8Array): void {
    this.w.pos = SEG;
    this.w.bytes(seg);
  }

  /** H(head ‖ seg) of what is at SEG. */
  digest(): Uint8Array {
    return blake3(this.w.buf.subarray(0, this.w.pos));
  }

  /** The head `body` would produce; throws (unindexed) if it cannot be encoded. Does not advance. */
  peek(body: unknown): Uint8Array {
    this.encode(body);
    return this.digest();
  }

  /** Moves the cursor to `head` (the one `digest` returned, once the segment is accepted). */
  moveTo(head: Uint8Array): void {
    this.w.buf.set(head, 0);
  }
}

/** The head after appending `body` to a record whose head is `prev` (one step of the chain). */
export function nextHead(prev: Hex, body: SegmentBody): Hex {
  return bytesToHex(new ChainCursor(hexToBytes(prev)).peek(body));
}
