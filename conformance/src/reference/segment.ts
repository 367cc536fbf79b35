// seg(·) and snap of spec/runrecord.md, written straight from its tables.
import type { AccountT, Segment, Snapshot } from '../contract/schemas.js';
import { addr, concat, str, u8, u32, u64 } from './bytes.js';

export type SnapshotForm = 'image' | 'transcript' | 'malformed';

/** Which form a reference names: neither, both, or a transcript beside a memory image is malformed. */
export function snapshotForm(s: Snapshot): SnapshotForm {
  if (s.transcript !== undefined)
    return s.root === undefined && s.memory === undefined ? 'transcript' : 'malformed';
  return s.root !== undefined ? 'image' : 'malformed';
}

export function snapBytes(s: Snapshot): Uint8Array {
  const form = snapshotForm(s);
  if (form === 'transcript' && s.transcript !== undefined) return concat(u8(0x02), addr(s.transcript));
  if (form === 'image' && s.root !== undefined) {
    const memory = s.memory === undefined ? u8(0x00) : concat(u8(0x01), addr(s.memory));
    return concat(u8(0x01), addr(s.root), memory);
  }
  throw new Error('a malformed snapshot reference has no bytes');
}

const PROVENANCE = { measured: 0x01, estimated: 0x02 } as const;
const REASON = { completed: 0x01, abandoned: 0x02, failed: 0x03, cancelled: 0x04 } as const;

function accountBytes(a: AccountT): Uint8Array {
  return concat(
    u8(0xac),
    u32(a.dispatched.length),
    ...a.dispatched.map(str),
    u32(a.resolved.length),
    ...a.resolved.map(str),
  );
}

export function segBytes(s: Segment): Uint8Array {
  switch (s.kind) {
    case 'executed':
      return s.account === undefined
        ? concat(u8(0x01), addr(s.attestation))
        : concat(u8(0x01), addr(s.attestation), accountBytes(s.account));
    case 'suspended':
      return concat(u8(0x02), snapBytes(s.snapshot), addr(s.manifest));
    case 'resumed':
      return concat(
        u8(0x03),
        snapBytes(s.snapshot),
        addr(s.manifest),
        u64(BigInt(s.idle_uj)),
        u8(PROVENANCE[s.idle_provenance]),
      );
    case 'closed':
      return concat(u8(0x04), u8(REASON[s.reason]));
  }
}
