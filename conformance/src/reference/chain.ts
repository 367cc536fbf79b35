// head₀ = H("sandbox.runrecord/1" ‖ unit_id ‖ grants_id); headₙ = H(headₙ₋₁ ‖ seg(segmentₙ)).
import type { Segment, Wire, WireSegmentT } from '../contract/schemas.js';
import { addr, ascii, concat, fromHex, H, toHex } from './bytes.js';
import { segBytes } from './segment.js';

export const FORMAT = 'sandbox.runrecord/1';

export function genesisPreimage(unitId: string, grantsId: string): Uint8Array {
  return concat(ascii(FORMAT), addr(unitId), addr(grantsId));
}

export function genesis(unitId: string, grantsId: string): string {
  return toHex(H(genesisPreimage(unitId, grantsId)));
}

export function advance(prevHead: string, segment: Segment): string {
  return toHex(H(concat(fromHex(prevHead), segBytes(segment))));
}

/** Chains segments as given, checking no rule: how the suite forges records that break exactly one rule. */
export function chainSegments(unitId: string, grantsId: string, segments: readonly Segment[]): Wire {
  let head = genesis(unitId, grantsId);
  const chained: WireSegmentT[] = [];
  for (const s of segments) {
    head = advance(head, s);
    chained.push({ ...s, head });
  }
  return { format: FORMAT, unit_id: unitId, grants_id: grantsId, segments: chained, head };
}
