// The ledger's read shapes, as the API shows them: a run (run-model's Run plus ledger facts) and its
// record. Neutral ground: the ledger builds them, the services and the HTTP layer pass them on.
import type { Run } from '@everdict/run-model';

/** A run as the API shows it: the run-model `Run` plus ledger facts. */
export type RunView = Run & {
  causalDepth: number;
  record: { head: string; length: number };
};

export interface RecordView {
  /** The `sandbox.runrecord/1` wire form (spec/runrecord.md). */
  wire: unknown;
  /** The verifier's summary, computed on this read from genesis. */
  verify: {
    ok: boolean;
    head?: string;
    length?: number;
    phase?: string;
    idleUj?: string;
    /** The account walk's verdict (`non_blocking`, `blocking`, `no_verdict`, …). */
    account?: string;
    /** runrecord's cost (`costToJson`): microjoules as decimal strings (they may exceed 2^53); `unresolved` a number. */
    cost?: { activeUj: string; idleUj: string; totalUj: string; unresolved: number };
    /** Keys whose attestation signatures verified, distinct, in first-seen order. */
    signedBy?: string[];
    error?: string;
    index?: number;
  };
}
