// Idle energy and a run's total cost: Σ attestation active_uj + Σ idle_uj. An attestation that cannot be
// resolved is reported, never counted as zero.
import { type AttestationStore, attestationAddress } from './attestation.js';
import type { Hex } from './bytes.js';
import type { RunRecord, Segment, SegmentBody } from './types.js';

/** Σ idle_uj over resumed segments (may exceed u64; bigint does not overflow). */
export function idleEnergy(segments: readonly (Segment | SegmentBody)[]): bigint {
  let sum = 0n;
  for (const s of segments) if (s.kind === 'resumed') sum += s.idleUj;
  return sum;
}

export interface UnresolvedAttestation {
  /** First segment that points at it. */
  readonly index: number;
  readonly attestation: Hex;
  /** missing: the store has no such object; address_mismatch: the store returned an object of another address. */
  readonly reason: 'missing' | 'address_mismatch' | 'store_error';
}

interface CostParts {
  readonly idleUj: bigint;
  /** Σ active_uj over the attestations that resolved (each distinct address counted once). */
  readonly resolvedActiveUj: bigint;
  readonly attestations: number;
}
export type RunCost =
  | (CostParts & { readonly complete: true; readonly activeUj: bigint; readonly totalUj: bigint })
  | (CostParts & { readonly complete: false; readonly unresolved: readonly UnresolvedAttestation[] });

/**
 * A run's total cost. Attestations are resolved through `store` and checked by address (a store cannot
 * substitute another object). If any cannot be resolved the result is incomplete and has no total.
 */
export async function runCost(
  record: RunRecord | readonly Segment[],
  store: AttestationStore,
): Promise<RunCost> {
  const segments = Array.isArray(record) ? (record as readonly Segment[]) : (record as RunRecord).segments;
  const idleUj = idleEnergy(segments);
  const firstIndex = new Map<Hex, number>();
  segments.forEach((s, i) => {
    if (s.kind === 'executed' && !firstIndex.has(s.attestation)) firstIndex.set(s.attestation, i);
  });
  let active = 0n;
  const unresolved: UnresolvedAttestation[] = [];
  for (const [address, index] of firstIndex) {
    let att: Awaited<ReturnType<AttestationStore['get']>>;
    try {
      att = await store.get(address);
    } catch {
      unresolved.push({ index, attestation: address, reason: 'store_error' });
      continue;
    }
    if (att === undefined) unresolved.push({ index, attestation: address, reason: 'missing' });
    else if (attestationAddress(att) !== address) {
      unresolved.push({ index, attestation: address, reason: 'address_mismatch' });
    } else active += att.activeUj;
  }
  const parts = { idleUj, resolvedActiveUj: active, attestations: firstIndex.size };
  if (unresolved.length > 0) return { ...parts, complete: false, unresolved };
  return { ...parts, complete: true, activeUj: active, totalUj: active + idleUj };
}
