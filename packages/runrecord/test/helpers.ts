import { genesisHead, nextHead } from '../src/chain.js';
import type { Hex, RunRecord, Segment, SegmentBody } from '../src/types.js';

/** A deterministic address from a small number (not a hash; any 32 bytes are an address). */
export const addr = (n: number): Hex => n.toString(16).padStart(2, '0').repeat(32);

export const UNIT = addr(0x11);
export const GRANTS = addr(0x22);

/** Chains bodies with correct heads but WITHOUT applying the rules (to forge rule-breaking records). */
export function forge(bodies: SegmentBody[], unitId = UNIT, grantsId = GRANTS): RunRecord {
  let head = genesisHead(unitId, grantsId);
  const segments: Segment[] = bodies.map((b) => {
    head = nextHead(head, b);
    return { ...b, head } as Segment;
  });
  return { unitId, grantsId, segments, head };
}

export const image = (n: number, memory?: number) =>
  memory === undefined ? { root: addr(n) } : { root: addr(n), memory: addr(memory) };
export const transcript = (n: number) => ({ transcript: addr(n) });

export const exec = (n: number, dispatched?: string[], resolved: string[] = []): SegmentBody =>
  dispatched === undefined
    ? { kind: 'executed', attestation: addr(n) }
    : { kind: 'executed', attestation: addr(n), account: { dispatched, resolved } };
export const susp = (
  snapshot: SegmentBody & { kind: 'suspended' } extends { snapshot: infer S } ? S : never,
  manifest = addr(0x99),
): SegmentBody => ({
  kind: 'suspended',
  snapshot,
  manifest,
});
export const res = (
  snapshot: SegmentBody & { kind: 'resumed' } extends { snapshot: infer S } ? S : never,
  idleUj = 1000n,
  manifest = addr(0x99),
): SegmentBody => ({ kind: 'resumed', snapshot, manifest, idleUj, idleProvenance: 'measured' });
export const closed = (
  reason: 'completed' | 'abandoned' | 'failed' | 'cancelled' = 'completed',
): SegmentBody => ({
  kind: 'closed',
  reason,
});

export const concat = (...parts: (Uint8Array | number[])[]): Uint8Array => {
  const out: number[] = [];
  for (const p of parts) out.push(...p);
  return Uint8Array.from(out);
};
export const hexBytes = (h: string) => Uint8Array.from(Buffer.from(h, 'hex'));
export const ascii = (s: string) => new TextEncoder().encode(s);
