// How a case is written: operations (the CLI's ops.json items) and a hand-stated expectation. The
// generator (generate.ts) adds the heads from the reference encoder and checks the expectation against it.
import type { AccountT, CostT, ErrorCodeT, PhaseT, Snapshot, VerdictT } from '../contract/schemas.js';
import type { PatchOpT, VectorClassT, VerifyExpectT } from '../vectors/schema.js';
import { MANIFEST, ROOT, TRANSCRIPT } from './addresses.js';

interface CaseBase {
  readonly name: string;
  readonly class: VectorClassT;
  readonly description: string;
  readonly unit?: string;
  readonly grants?: string;
  /** Items of ops.json; a case may hold deliberately malformed ones, hence unknown. */
  readonly ops: readonly unknown[];
  /** Keys passed to `verify` as `--trust-key` (rule 9). */
  readonly trust_keys?: readonly string[];
}

export interface BuildCase extends CaseBase {
  readonly kind: 'build';
  readonly refuse?: { readonly error: ErrorCodeT; readonly index: number };
  readonly verify?: {
    readonly idle_uj?: string;
    readonly account?: VerdictT;
    readonly phase?: PhaseT;
    readonly cost?: CostT;
    readonly signed_by?: readonly string[];
  };
  readonly pinned?: ReadonlyArray<{
    readonly index: number;
    readonly layout: string;
    readonly segment_hex: string;
  }>;
  /** Hand-written `att` layouts of bundled bodies: the generator checks each against the reference. */
  readonly pinned_attestations?: ReadonlyArray<{
    readonly address: string;
    readonly layout: string;
    readonly att_hex: string;
    readonly signed_hex: string;
  }>;
}

/** In a tamper case's expect_head: the head the untouched record has. */
export const RECORD_HEAD = 'record-head';

export interface TamperCase extends CaseBase {
  readonly kind: 'tamper';
  readonly patch: readonly PatchOpT[];
  /** A head to pass as --expect-head, or RECORD_HEAD. */
  readonly expect_head?: string;
  readonly expect: VerifyExpectT;
}

/**
 * A record chained by the reference encoder with no rule checked, optionally patched: one defect only. The
 * `body` of an execute op goes into the bundle under the op's `attestation` (whatever its real address), so
 * a forged record can carry a body that does not bind; `attestations` adds entries no op carries.
 */
export interface ForgedCase extends CaseBase {
  readonly kind: 'verify';
  readonly attestations?: Readonly<Record<string, unknown>>;
  readonly patch?: readonly PatchOpT[];
  readonly expect_head?: string;
  readonly expect: VerifyExpectT;
}

export type Case = BuildCase | TamperCase | ForgedCase;

export function image(root: string = ROOT, memory?: string): Snapshot {
  return memory === undefined ? { root } : { root, memory };
}

export function transcript(address: string = TRANSCRIPT): Snapshot {
  return { transcript: address };
}

export function calls(dispatched: string[] = [], resolved: string[] = []): AccountT {
  return { dispatched, resolved };
}

export function execute(attestation: string, account?: AccountT): unknown {
  return account === undefined ? { op: 'execute', attestation } : { op: 'execute', attestation, account };
}

export function suspend(snapshot: unknown, manifest: string = MANIFEST): unknown {
  return { op: 'suspend', snapshot, manifest };
}

export function resume(
  snapshot: unknown,
  idle_uj = '1250000',
  manifest: string = MANIFEST,
  idle_provenance: 'measured' | 'estimated' = 'estimated',
): unknown {
  return { op: 'resume', snapshot, manifest, idle_uj, idle_provenance };
}

export function close(reason: 'completed' | 'abandoned' | 'failed' | 'cancelled'): unknown {
  return { op: 'close', reason };
}

export const fails = (error: ErrorCodeT, index: number | null): VerifyExpectT => ({
  ok: false,
  error,
  index,
});
