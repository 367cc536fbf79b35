// The steward's audit chain (issue 18 §4; durable-run-records.md "Relation to the audit chain"): a runner
// sets each attestation's `audit_prev` to the address of the attestation it signed before — one chain per
// runner key, in signing order across its slots — so an interval deleted from a runner's history breaks
// the chain. On every accepted completion the control plane checks the link (`linkRunnerAudit`, inside the
// completion's transaction) and keeps it; `GET /runners/:id/audit` serves the chain, and
// `everdict-runrecord verify-audit` checks it offline.
//
// Continuity rule, per runner KEY (a key paired again keeps its chain): `audit_prev` must name the key's
// last attestation this ledger accepted. An attestation without `audit_prev` is accepted only while the key
// has never linked one (its first, or a runner that predates the chain); once it has linked, an unlinked
// attestation is refused like a wrong link — 409 `attestation_mismatch`, nothing written. The first link
// this ledger sees may name a predecessor it never saw (a runner whose chain began against an earlier
// ledger, e.g. a reset database): it is kept as the chain's starting point, and `verify-audit` reports it
// (`from`), so a served chain never hides that it does not start at the key's genesis.
import type { AttestationBody, Hex } from '@everdict/runrecord';
import { sql } from 'kysely';
import { prepared } from '../db/prepared.js';
import type { Executor } from '../db/tx.js';
import { ControlPlaneError } from '../errors.js';
import type { RunnerIdentity } from '../runners/registry.js';
import type { Principal } from '../services/types.js';

/** advisory lock class of the per-runner chain (the object id is hashtext(runner id)) */
export const AUDIT_LOCK_CLASS = 0x4155; // "AU"

/** A key's last link as `RunnerAuditLinks` reads it: its seq and address, and whether the key ever linked. */
export interface LastAuditLink {
  seq: number;
  address: string;
  linked: boolean;
}

export interface AuditLink {
  seq: number;
  address: Hex;
  audit_prev: Hex | null;
  /** The run the interval belongs to — only for runs of the caller's tenant (null otherwise). */
  run_id: string | null;
  created_at: string;
  /** The stored attestation body (wire form), for offline verification. */
  attestation: unknown;
}

/** Checks and keeps one link of the runner's chain (call inside the completion's transaction). */
export async function linkRunnerAudit(
  tx: Executor,
  runner: RunnerIdentity,
  body: AttestationBody,
  address: Hex,
  at: { tenantId: string; runId: string; now: string },
): Promise<void> {
  const links = new RunnerAuditLinks(tx, runner);
  await links.link(body, address, at);
  await links.save();
}

/**
 * One transaction's links of a runner key's chain (a completion batch): the key's lock taken and its last
 * link read once, at the first link; each link checked against the one before it (the last one kept, or
 * the one linked just before in this batch); all kept in ONE insert at `save()` — call it before the
 * transaction commits. A refusal throws, as `linkRunnerAudit` does (the caller rolls the transaction back).
 */
export class RunnerAuditLinks {
  readonly #tx: Executor;
  readonly #runner: RunnerIdentity;
  /** The key's last link (undefined: not read yet; null: none). */
  #last: LastAuditLink | null | undefined;
  #pending: {
    seq: number;
    address: Hex;
    prev: Hex | null;
    tenantId: string;
    runId: string;
    now: string;
  }[] = [];

  constructor(tx: Executor, runner: RunnerIdentity) {
    this.#tx = tx;
    this.#runner = runner;
  }

  /**
   * The key's lock was taken and its last link read by the caller, in this transaction — the lock in an earlier
   * statement than the read (completion-rows.ts `prefetchBatch`): `link` then reads nothing.
   */
  primed(last: LastAuditLink | null): void {
    if (this.#last !== undefined) throw new Error("the runner key's audit chain was read already");
    this.#last = last;
  }

  async link(
    body: AttestationBody,
    address: Hex,
    at: { tenantId: string; runId: string; now: string },
  ): Promise<void> {
    const key = this.#runner.publicKey;
    if (this.#last === undefined) {
      // Named prepared statements (db/prepared.ts): planned once per pooled connection, not per batch.
      await sql`${sql.raw(prepared('audit_lock'))}
        SELECT pg_advisory_xact_lock(${AUDIT_LOCK_CLASS}::int, hashtext(${key}))`.execute(this.#tx);
      const { rows } = await sql<{
        seq: number;
        address: string;
        linked: boolean;
      }>`${sql.raw(prepared('audit_last'))}
        SELECT seq, address, EXISTS (SELECT 1 FROM runner_audit WHERE runner_key = ${key}
          AND audit_prev IS NOT NULL) AS linked
        FROM runner_audit WHERE runner_key = ${key} ORDER BY seq DESC LIMIT 1`.execute(this.#tx);
      const r = rows[0];
      this.#last = r ? { seq: Number(r.seq), address: r.address, linked: r.linked } : null;
    }
    const last = this.#last;
    const prev = body.auditPrev;
    if (last !== null && (prev === undefined ? last.linked : prev !== last.address)) {
      throw new ControlPlaneError(
        'attestation_mismatch',
        "audit_prev is not the runner's previous attestation",
        { expected: last.address },
      );
    }
    const seq = (last?.seq ?? -1) + 1;
    this.#pending.push({ seq, address, prev: prev ?? null, ...at });
    this.#last = { seq, address, linked: (last?.linked ?? false) || prev !== undefined };
  }

  /** Inserts the links checked so far (one statement). */
  async save(): Promise<void> {
    if (this.#pending.length === 0) return;
    // One text for any number of links (columns as arrays): a named prepared statement (db/prepared.ts).
    await sql`${sql.raw(prepared('audit_save'))}
      ${this.takeInsert()}`.execute(this.#tx);
  }

  /**
   * The insert of the links checked so far, for a statement of the caller's (a CTE body; an empty one inserts
   * nothing) — they count as saved: the caller runs it before the transaction commits.
   */
  takeInsert() {
    const r = this.#runner;
    const p = this.#pending;
    this.#pending = [];
    return sql`INSERT INTO runner_audit (runner_id, seq, runner_key, address, audit_prev, tenant_id, run_id, created_at)
      SELECT ${r.id}, x.seq, ${r.publicKey}, x.address, x.audit_prev, x.tenant_id, x.run_id, x.created_at::timestamptz
      FROM unnest(${p.map((l) => l.seq)}::int[], ${p.map((l) => l.address)}::text[],
        ${p.map((l) => l.prev)}::text[], ${p.map((l) => l.tenantId)}::text[], ${p.map((l) => l.runId)}::text[],
        ${p.map((l) => l.now)}::text[]) WITH ORDINALITY AS x(seq, address, audit_prev, tenant_id, run_id, created_at, ord)
      ORDER BY x.ord`;
  }
}

/** The chain of a runner the caller may see (its tenant's, or a shared one), with the stored bodies. */
export async function runnerAudit(
  ex: Executor,
  p: Principal,
  runnerId: string,
): Promise<{ runner: string; key: Hex; links: AuditLink[] }> {
  const runner = await ex
    .selectFrom('runners')
    .select(['id', 'public_key', 'tenant_id'])
    .where('id', '=', runnerId)
    .executeTakeFirst();
  if (!runner || (runner.tenant_id !== null && runner.tenant_id !== p.tenantId))
    throw new ControlPlaneError('not_found', `no runner ${runnerId}`);
  const { rows } = await sql<{
    seq: number;
    address: string;
    audit_prev: string | null;
    tenant_id: string;
    run_id: string;
    created_at: Date | string;
    body: unknown;
  }>`SELECT a.seq, a.address, a.audit_prev, a.tenant_id, a.run_id, a.created_at, t.body
    FROM runner_audit a LEFT JOIN attestations t ON t.address = a.address
    WHERE a.runner_key = ${runner.public_key} ORDER BY a.seq`.execute(ex);
  return {
    runner: runner.id,
    key: runner.public_key,
    links: rows.map((r) => ({
      seq: Number(r.seq),
      address: r.address,
      audit_prev: r.audit_prev,
      run_id: r.tenant_id === p.tenantId ? r.run_id : null,
      created_at: new Date(r.created_at).toISOString(),
      attestation: r.body,
    })),
  };
}
