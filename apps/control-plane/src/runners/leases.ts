// Runner leases (docs/runner-protocol.md) on THE lease rule (src/leases/, table run_leases, holder = the
// runner's id, epoch = the run's attempt). Offered in the admission kernel's WFQ order through the dispatch
// lane's own claim (scheduler/claim-start.ts), restricted to what the runner can take (kinds, images, its
// tenant when scoped), the lease granted in the same statement; extended by heartbeats (renew); a lease not
// renewed expires and the expiry sweep (leases/sweep.ts) requeues its run — as does a revocation, at once.
import type { Harness } from '@everdict/run-model';
import { sql } from 'kysely';
import { prepared } from '../db/prepared.js';
import type { Tx } from '../db/tx.js';
import { retryOnConflict } from '../db/tx.js';
import type { LeasePolicy } from '../leases/policy.js';
import { assertCurrentEpoch, REVOKED_EXPIRY_MS, renewLive } from '../leases/store.js';
import { sweepExpiredLeases } from '../leases/sweep.js';
import type { RunRow } from '../ledger/runs.js';
import { settleMany } from '../scheduler/batch-transitions.js';
import { claimAndStart, type StartedRun } from '../scheduler/claim-start.js';
import type { Deps } from '../services/context.js';
import { resolveHarness } from './harnesses.js';
import type { RunnerIdentity } from './registry.js';
import { leasedKinds } from './schemas.js';

export interface Lease {
  runId: string;
  tenant: string;
  kind: string;
  epoch: number;
  attempt: number;
  spec: {
    kind: string;
    subject: unknown;
    placement: unknown;
    lifetime: string;
    limits: Record<string, unknown>;
  };
  unitId: string;
  grantsId: string;
  recordHead: string;
  leaseMs: number;
  heartbeatMs: number;
  /** The trajectory seq of this interval's first event (earlier attempts' events come before). */
  seqFrom: number;
  /** What the run's grants allow its sandbox: `network: 'granted'` only when its placement says so. */
  grants: { network: 'none' | 'granted' };
  harness?: Harness;
}

/**
 * Leases a runner may hold per slot. A runner's slot is its sandbox's compute, not its lease: once an
 * interval's command has exited (its usage and energy read) the slot executes the next lease while that
 * interval's artifacts, dispose and signed completion run behind it, its lease still held until the
 * completion settles it. So a runner holds its slots executing plus the ones settling behind them — at most
 * one settling per slot — and never executes more than `slots` at once (the runner's own rule,
 * apps/runner/src/daemon.ts, which uses the same bound). THE bound of both grant paths (a lease request and
 * a completion batch's next leases), through `grantLeases`.
 */
export const LEASES_PER_SLOT = 2;

/** The most leases a runner of `slots` slots holds at once. */
export const leaseBound = (slots: number): number => LEASES_PER_SLOT * slots;

/**
 * Up to `free` leases for this runner (none while it drains or is revoked), in WFQ order, never more than
 * `leaseBound(slots)` held at once.
 */
export async function grantLeases(
  deps: Deps,
  policy: LeasePolicy,
  runner: RunnerIdentity,
  free: number,
): Promise<Lease[]> {
  if (free <= 0) return [];
  return retryOnConflict(() =>
    deps.db.transaction().execute(async (tx) => {
      // The runner's state under its row lock: a revoke or drain committed before this claim is seen, and
      // one that comes after waits for it (then ends these leases). The lock is exclusive among grants
      // (FOR NO KEY UPDATE: it does not block the foreign-key checks of rows naming the runner), so two grants
      // to one runner — a long-poll and a completion batch's next leases — take turns: under a shared lock both
      // counted the leases held before either committed and each granted up to the bound
      // (test/grant-bound.pg.test.ts: 4 leases for a bound of 2).
      const { rows: runnerRows } = await sql<{ state: string }>`${sql.raw(prepared('grant_runner'))}
        SELECT r.state FROM runners r WHERE r.id = ${runner.id} FOR NO KEY UPDATE OF r`.execute(tx);
      if (runnerRows[0]?.state !== 'active') return [];
      // Counted in a statement of its own, after the lock: a statement's snapshot is taken when it starts, so a
      // count in the locking statement would miss the leases of a grant that committed while it waited.
      const { rows: heldRows } = await sql<{ held: number }>`${sql.raw(prepared('grant_held'))}
        SELECT count(*)::int AS held FROM run_leases WHERE holder = ${runner.id}`.execute(tx);
      const n = Math.min(free, leaseBound(runner.capabilities.slots) - Number(heldRows[0]?.held ?? 0));
      if (n <= 0) return [];
      const started = await claimAndStart(
        tx,
        n,
        deps.clock(),
        leasedKinds(runner.capabilities.kinds),
        { holder: runner.id, leaseMs: policy.leaseMs },
        { tenant: runner.tenantId ?? undefined, images: runner.capabilities.images },
      );
      // A run past its expiry is not handed out: failed `expired` here, in this transaction, before it ran.
      const live = await failExpired(tx, deps, started);
      if (live.length === 0) return [];
      // One statement: the leased runs' rows and where each interval's journal starts (inserted).
      const rows = await openJournals(tx, live);
      const byId = new Map(rows.map((r) => [r.id, r]));
      const out: Lease[] = [];
      for (const s of live) {
        const r = byId.get(s.runId);
        if (r) out.push(await leaseOf(tx, policy, r, s.epoch, Number(r.next)));
      }
      return out;
    }),
  );
}

/**
 * The claimed runs whose expiry (`ttlSec`/`expiresAt`) has passed, failed `expired` in `tx` (the batch settle:
 * no executed interval — nothing ran —, the record closed, the lease and slot released); the others, to lease.
 * A runner would only be told to stop them at once (its sandbox's deadline already past).
 */
async function failExpired(tx: Tx, deps: Deps, started: readonly StartedRun[]): Promise<StartedRun[]> {
  const nowMs = deps.clock().getTime();
  const expired = started.filter((s) => s.expiresAtMs !== undefined && s.expiresAtMs <= nowMs);
  if (expired.length === 0) return [...started];
  await settleMany(
    tx,
    deps,
    expired.map((s) => {
      const message = `its TTL ran out before it started (expiresAt ${new Date(s.expiresAtMs ?? 0).toISOString()})`;
      return {
        tenant: s.tenant,
        runId: s.runId,
        epoch: s.epoch,
        event: { type: 'fail', error: { code: 'expired', message, retryable: false } },
        extras: { outputs: { summary: message }, nothingRan: true },
      };
    }),
  );
  return started.filter((s) => !expired.includes(s));
}

/** What a lease is made of: the run's columns it names (read with its journal's start). */
type LeasedRun = Pick<
  RunRow,
  | 'id'
  | 'tenant_id'
  | 'kind'
  | 'subject'
  | 'placement'
  | 'lifetime'
  | 'expires_at'
  | 'unit_id'
  | 'grants_id'
  | 'interval_head'
  | 'record_head'
>;

/**
 * Each granted interval's journal in the run's trajectory starts where the previous attempts' ended (a
 * killed attempt's events stay: they happened) — or after spans an OTLP import appended while no lease was
 * held, if later (their row's epoch is OUTSIDE_LEASE_EPOCH, 0: trajectory/run-trajectories.ts). Read after
 * the claim, which waited for any append still holding the lease row (or the run's row: an import), so every
 * event an earlier epoch or an import stored is counted. The same statement reads the
 * leased runs' rows (after the claim that started them, in this transaction).
 */
async function openJournals(
  tx: Tx,
  started: readonly { runId: string; epoch: number }[],
): Promise<(LeasedRun & { next: number })[]> {
  // One statement: each run's next seq (after its earlier epochs' journals), this epoch's row inserted,
  // and the run's row.
  // A named prepared statement (db/prepared.ts): one text for any number of runs (arrays are parameters).
  const ids = started.map((s) => s.runId);
  const { rows } = await sql<LeasedRun & { next: number }>`${sql.raw(prepared('open_journals'))}
    WITH s AS (SELECT * FROM unnest(${ids}::text[], ${started.map((s) => s.epoch)}::int[])
        AS s(run_id, epoch)),
      prior AS (SELECT j.run_id, max(j.seq_from + j.event_count)::int AS next
        FROM runner_journals j WHERE j.run_id = ANY(${ids}::text[]) GROUP BY j.run_id),
      ins AS (INSERT INTO runner_journals (run_id, epoch, seq_from, event_count)
        SELECT s.run_id, s.epoch, COALESCE(p.next, 0), 0 FROM s LEFT JOIN prior p ON p.run_id = s.run_id
        ON CONFLICT (run_id, epoch) DO NOTHING RETURNING 1)
    SELECT r.id, r.tenant_id, r.kind, r.subject, r.placement, r.lifetime, r.expires_at, r.unit_id,
      r.grants_id, r.interval_head, r.record_head, COALESCE(p.next, 0)::int AS next
    FROM s JOIN runs r ON r.id = ANY(${ids}::text[]) AND r.id = s.run_id LEFT JOIN prior p ON p.run_id = s.run_id
    WHERE (SELECT count(*) FROM ins) >= 0`.execute(tx);
  return rows;
}

async function leaseOf(
  tx: Tx,
  policy: LeasePolicy,
  r: LeasedRun,
  epoch: number,
  seqFrom: number,
): Promise<Lease> {
  const subject = r.subject as Record<string, unknown>;
  const ref = subject.harness as { id?: string; version?: string } | undefined;
  const harness =
    r.kind === 'eval' && ref?.id && ref.version
      ? await resolveHarness(tx, r.tenant_id, ref.id, ref.version)
      : undefined;
  return {
    runId: r.id,
    tenant: r.tenant_id,
    kind: r.kind,
    epoch,
    attempt: epoch,
    spec: {
      kind: r.kind,
      subject: r.subject,
      placement: r.placement,
      lifetime: r.lifetime,
      limits: r.expires_at ? { expiresAt: r.expires_at.toISOString() } : {},
    },
    unitId: r.unit_id,
    grantsId: r.grants_id,
    recordHead: r.interval_head ?? r.record_head,
    leaseMs: policy.leaseMs,
    heartbeatMs: policy.heartbeatMs,
    seqFrom,
    grants: {
      network: (r.placement as { network?: string } | null)?.network === 'granted' ? 'granted' : 'none',
    },
    ...(harness ? { harness } : {}),
  };
}

/**
 * Extend the leases the runner still holds; answer the others as `lost` — settled, cancelled, requeued,
 * revoked, expired or re-granted under another epoch: the runner kills their compute — and whether the
 * runner is draining.
 */
export async function heartbeat(
  deps: Deps,
  policy: LeasePolicy,
  runner: RunnerIdentity,
  held: readonly { runId: string; epoch: number }[],
): Promise<{ lost: string[]; draining: boolean }> {
  const now = deps.clock();
  await deps.db.updateTable('runners').set({ last_heartbeat_at: now }).where('id', '=', runner.id).execute();
  const draining = runner.state === 'draining';
  if (held.length === 0) return { lost: [], draining };
  // A lease whose run stopped running (cancelled, settled by someone else) is lost too.
  const lost = await renewLive(deps.db, runner.id, held, now.getTime(), policy.leaseMs, ['running']);
  return { lost, draining };
}

/** 409 `stale_lease` unless the runner holds the run's current lease at `epoch`. */
export function assertRunnerLease(tx: Tx, runner: RunnerIdentity, runId: string, epoch: number) {
  return assertCurrentEpoch(tx, runId, epoch, runner.id);
}

/**
 * End every lease a runner holds (inside the revoking transaction): they are expired as of now, for good — a
 * heartbeat or a result already on its way under one of them is refused (`REVOKED_EXPIRY_MS`).
 */
export async function expireHolder(tx: Tx, runnerId: string): Promise<string[]> {
  const rows = await tx
    .updateTable('run_leases')
    .set({ expires_at_ms: REVOKED_EXPIRY_MS })
    .where('holder', '=', runnerId)
    .returning('run_id')
    .execute();
  return rows.map((r) => r.run_id);
}

/** Requeue (or fail, past the attempts) the runs of expired leases: the lease rule's sweep. */
export async function sweep(deps: Deps, policy: LeasePolicy): Promise<string[]> {
  const r = await sweepExpiredLeases(deps, policy, deps.clock().getTime());
  return [...r.requeued, ...r.failed];
}

/**
 * After a revoke committed (a runner's, or an agent host's): sweep the leases it expired — their runs requeue
 * (or fail past their attempts). Answers the revoked holder's runs the sweep moved.
 */
export async function requeueExpired(
  deps: Deps,
  policy: LeasePolicy,
  expired: readonly string[],
): Promise<string[]> {
  if (expired.length === 0) return [];
  const swept = new Set(await sweep(deps, policy));
  return expired.filter((r) => swept.has(r));
}
