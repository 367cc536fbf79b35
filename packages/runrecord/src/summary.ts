// JSON shapes of a verification: the command-line contract's output (snake_case, the spec's) and the cost
// as a JSON-safe value for an HTTP API (decimal strings: the sums are exact and may exceed 2^64 − 1).
import type { RecordCost } from './attest-rules.js';
import type { Hex } from './bytes.js';
import type { VerifyResult } from './verify.js';

/** A RecordCost as JSON: microjoules as decimal strings, `unresolved` a count. */
export interface CostJson {
  readonly activeUj: string;
  readonly idleUj: string;
  readonly totalUj: string;
  readonly unresolved: number;
}

export function costToJson(cost: RecordCost): CostJson {
  return {
    activeUj: cost.activeUj.toString(),
    idleUj: cost.idleUj.toString(),
    totalUj: cost.totalUj.toString(),
    unresolved: cost.unresolved,
  };
}

/** What `everdict-runrecord verify` prints (the spec's command-line contract). */
export type VerifyOutput =
  | {
      ok: true;
      head: Hex;
      length: number;
      idle_uj: string;
      account: string;
      phase: string;
      cost: { active_uj: string; idle_uj: string; total_uj: string; unresolved: number };
      signed_by: Hex[];
    }
  | { ok: false; error: string; index?: number };

export function verifyOutput(r: VerifyResult): VerifyOutput {
  if (!r.ok)
    return r.index === undefined
      ? { ok: false, error: r.error }
      : { ok: false, error: r.error, index: r.index };
  return {
    ok: true,
    head: r.head,
    length: r.length,
    idle_uj: r.idleUj.toString(),
    account: r.account.verdict,
    phase: r.phase,
    cost: {
      active_uj: r.cost.activeUj.toString(),
      idle_uj: r.cost.idleUj.toString(),
      total_uj: r.cost.totalUj.toString(),
      unresolved: r.cost.unresolved,
    },
    signed_by: [...r.signedBy],
  };
}
