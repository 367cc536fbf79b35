// A paired host's attestation of an interval it ends: the `sandbox.attestation/1` body its signer signs —
// bound to the turn's unit and grant set, the record head the interval started at, and the journal root
// (the stored transcript's address). The control plane checks it before it appends the `executed` segment.
import { encodeAttestationBody, type Hex, type Outcome } from '@everdict/runrecord';
import type { IntervalSigner } from '../host/host-key.js';

/** The active interval's energy model: wall-clock × 2 W, estimated (the remote model's is not observable). */
export const AGENT_METER = { meter: 'agent-wallclock-model', watts: 2 } as const;

export interface IntervalFacts {
  readonly unitId: string;
  readonly grantsId: string;
  /** The record head the interval started at (the lease's, or the one its `resumed` report answered). */
  readonly recordHead: string;
  readonly startedMs: number;
  readonly endedMs: number;
  /** The stored transcript's address (64 hex). */
  readonly journalRoot: string;
  readonly outcome: Outcome;
}

/** The signed attestation's wire body, as a report carries it. */
export function signInterval(signer: IntervalSigner, f: IntervalFacts): Record<string, unknown> {
  const endedMs = Math.max(f.startedMs, f.endedMs);
  const { body } = signer({
    unitId: f.unitId as Hex,
    grantsId: f.grantsId as Hex,
    recordHead: f.recordHead as Hex,
    startedMs: BigInt(f.startedMs),
    endedMs: BigInt(endedMs),
    activeUj: BigInt(Math.max(1, Math.round((endedMs - f.startedMs) * AGENT_METER.watts * 1000))),
    provenance: 'estimated',
    meter: AGENT_METER.meter,
    journalRoot: f.journalRoot as Hex,
    outcome: f.outcome,
    exitCode: f.outcome === 'failed' ? 1 : 0,
  });
  return encodeAttestationBody(body) as unknown as Record<string, unknown>;
}
