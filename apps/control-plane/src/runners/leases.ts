// Runner leases (docs/runner-protocol.md): a runner's claim on a running run, fenced by `epoch` (bumped on
// every grant of the run). Offered in the admission kernel's WFQ order through the dispatch lane's own claim
// (scheduler/claim-start.ts, restricted to what the runner can take: kinds, images, its tenant when scoped);
// extended by heartbeats; a lease that expires (no heartbeat for LEASE_MS) or whose runner is revoked ends,
// and its run is requeued — queued again under its original admission, ahead by its age, with no segment
// written for the interval nobody reported.
//
// Isolated here behind small functions: the lease module of issue 10 (`src/leases/`, table `run_leases`,
// branch `resilience`) had not landed when this was built; this table is `runner_leases`.
import type { Harness, RunClass } from '@everdict/run-model';
import { sql } from 'kysely';
import { LANE, QUEUED_COLUMN } from '../admission-store/rows.js';
import { numeric } from '../db/numeric.js';
import type { Tx } from '../db/tx.js';
import { retryOnConflict, withTx } from '../db/tx.js';
import { ControlPlaneError } from '../errors.js';
import { appendEvents } from '../ledger/events.js';
import { lockRun, type RunRow } from '../ledger/runs.js';
import { claimAndStart } from '../scheduler/claim-start.js';
import { type Deps, DISPATCH_CHANNEL } from '../services/context.js';
import { resolveHarness } from './harnesses.js';
import type { RunnerIdentity } from './registry.js';

/** A lease lives this long past its last heartbeat. */
export const LEASE_MS = 10_000;
/** How often a runner heartbeats. */
export const HEARTBEAT_MS = 2_000;

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
  harness?: Harness;
}

/** Up to `free` leases for this runner (none while it drains), in WFQ order, each with epoch + 1. */
export async function grantLeases(deps: Deps, runner: RunnerIdentity, free: number): Promise<Lease[]> {
  if (runner.state !== 'active' || free <= 0) return [];
  return retryOnConflict(() =>
    deps.db.transaction().execute(async (tx) => {
      // The runner's state under its row lock: a revoke or drain committed before this claim is seen.
      const live = await tx
        .selectFrom('runners')
        .select('state')
        .where('id', '=', runner.id)
        .forShare()
        .executeTakeFirst();
      if (live?.state !== 'active') return [];
      const held = await tx
        .selectFrom('runner_leases')
        .select(sql<number>`count(*)::int`.as('n'))
        .where('runner_id', '=', runner.id)
        .where('active', '=', true)
        .executeTakeFirstOrThrow();
      const n = Math.min(free, runner.capabilities.slots - Number(held.n));
      if (n <= 0) return [];
      const now = deps.clock();
      const started = await claimAndStart(tx, n, now, runner.capabilities.kinds, {
        tenant: runner.tenantId ?? undefined,
        images: runner.capabilities.images,
      });
      if (started.length === 0) return [];
      const nowMs = now.getTime();
      const ids = started.map((s) => s.runId);
      const leases = await sql<{ run_id: string; epoch: number }>`
        INSERT INTO runner_leases (run_id, tenant_id, runner_id, epoch, active, granted_at_ms, expires_at_ms)
        SELECT s.run_id, s.tenant, ${runner.id}, 1, true, ${nowMs}::bigint, ${nowMs + LEASE_MS}::bigint
        FROM jsonb_to_recordset(${JSON.stringify(started.map((s) => ({ run_id: s.runId, tenant: s.tenant })))}::jsonb)
          AS s(run_id text, tenant text)
        ON CONFLICT (run_id) DO UPDATE SET runner_id = EXCLUDED.runner_id, epoch = runner_leases.epoch + 1,
          active = true, granted_at_ms = EXCLUDED.granted_at_ms, expires_at_ms = EXCLUDED.expires_at_ms
        RETURNING run_id, epoch`.execute(tx);
      const epochOf = new Map(leases.rows.map((l) => [l.run_id, Number(l.epoch)]));
      const rows = await tx.selectFrom('runs').selectAll().where('id', 'in', ids).execute();
      const byId = new Map(rows.map((r) => [r.id, r]));
      const out: Lease[] = [];
      for (const s of started) {
        const r = byId.get(s.runId);
        if (!r) continue;
        out.push(await leaseOf(tx, r, epochOf.get(s.runId) ?? 1));
      }
      return out;
    }),
  );
}

async function leaseOf(tx: Tx, r: RunRow, epoch: number): Promise<Lease> {
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
    leaseMs: LEASE_MS,
    heartbeatMs: HEARTBEAT_MS,
    ...(harness ? { harness } : {}),
  };
}

/**
 * Extend the leases the runner still holds; answer the others as `lost` (settled, cancelled, requeued,
 * revoked, expired, or re-granted under another epoch) and whether the runner is draining.
 */
export async function heartbeat(
  deps: Deps,
  runner: RunnerIdentity,
  held: readonly { runId: string; epoch: number }[],
): Promise<{ lost: string[]; draining: boolean }> {
  const now = deps.clock();
  const nowMs = now.getTime();
  await deps.db.updateTable('runners').set({ last_heartbeat_at: now }).where('id', '=', runner.id).execute();
  if (held.length === 0) return { lost: [], draining: runner.state === 'draining' };
  const kept = await sql<{ run_id: string }>`
    UPDATE runner_leases l SET expires_at_ms = ${nowMs + LEASE_MS}::bigint
    FROM jsonb_to_recordset(${JSON.stringify(held.map((h) => ({ run_id: h.runId, epoch: h.epoch })))}::jsonb)
      AS h(run_id text, epoch int), runs r
    WHERE l.run_id = h.run_id AND l.epoch = h.epoch AND l.runner_id = ${runner.id} AND l.active
      AND l.expires_at_ms >= ${nowMs}::bigint AND r.id = l.run_id AND r.status = 'running'
    RETURNING l.run_id`.execute(deps.db);
  const alive = new Set(kept.rows.map((k) => k.run_id));
  return {
    lost: held.filter((h) => !alive.has(h.runId)).map((h) => h.runId),
    draining: runner.state === 'draining',
  };
}

/** The runner's current lease of a run under `epoch`, locked; anything else is 409 `stale_lease`. */
export async function lockLease(tx: Tx, runner: RunnerIdentity, runId: string, epoch: number, nowMs: number) {
  const lease = await tx
    .selectFrom('runner_leases')
    .selectAll()
    .where('run_id', '=', runId)
    .forUpdate()
    .executeTakeFirst();
  const current =
    lease !== undefined &&
    lease.active &&
    lease.runner_id === runner.id &&
    lease.epoch === epoch &&
    numeric(lease.expires_at_ms) >= nowMs;
  if (!current || !lease) throw staleLease(runId, epoch);
  return lease;
}

export const staleLease = (runId: string, epoch: number) =>
  new ControlPlaneError('stale_lease', `run ${runId}: epoch ${epoch} is not a lease this runner holds`, {
    runId,
    epoch,
  });

/**
 * Requeue a run whose lease ended without a result: running → queued under its original admission (slot
 * back to queued, the tenant's counters moved back, a queue entry at the lane's current virtual time with
 * its admission time, so aging puts it ahead). The interval nobody reported leaves no segment. The lease row
 * is deactivated; a run no longer running (settled, cancelled) only loses its lease.
 */
export async function requeueRun(
  tx: Tx,
  deps: Deps,
  tenant: string,
  runId: string,
  reason: string,
): Promise<boolean> {
  const row = await lockRun(tx, tenant, runId);
  await tx.updateTable('runner_leases').set({ active: false }).where('run_id', '=', runId).execute();
  if (!row || row.status !== 'running') return false;
  const now = deps.clock();
  const slot = await tx
    .selectFrom('adm_slots')
    .select(['class', 'kind', 'admitted_at', 'status'])
    .where('tenant', '=', tenant)
    .where('run_id', '=', runId)
    .forUpdate()
    .executeTakeFirst();
  if (!slot || slot.status !== 'running') return false;
  const cls = slot.class as RunClass;
  await tx
    .updateTable('runs')
    .set({
      status: 'queued',
      updated_at: now,
      started_at: null,
      interval_started_at: null,
      interval_head: null,
    })
    .where('id', '=', runId)
    .execute();
  await tx
    .updateTable('adm_slots')
    .set({ status: 'queued', started_at: null })
    .where('tenant', '=', tenant)
    .where('run_id', '=', runId)
    .execute();
  await sql`UPDATE adm_tenants SET running = running - 1, queued = queued + 1,
      ${sql.ref(QUEUED_COLUMN[cls])} = ${sql.ref(QUEUED_COLUMN[cls])} + 1
    WHERE tenant = ${tenant}`.execute(tx);
  await sql`INSERT INTO adm_queue (run_id, tenant, class, lane, finish, enqueued_at, kind)
    SELECT ${runId}, ${tenant}, ${cls}, ${LANE[cls]}, COALESCE((SELECT v FROM adm_vtime WHERE lane = ${LANE[cls]}), 0),
      ${numeric(slot.admitted_at)}::bigint, ${slot.kind}`.execute(tx);
  await appendEvents(
    tx,
    [{ tenant, kind: 'run.requeued', runId, at: now.toISOString(), data: { runId, kind: row.kind, reason } }],
    DISPATCH_CHANNEL,
  );
  return true;
}

/** End every lease a runner holds (revocation): their runs requeue. Returns the runs requeued. */
export async function expireRunnerLeases(tx: Tx, deps: Deps, runnerId: string): Promise<string[]> {
  const leases = await tx
    .selectFrom('runner_leases')
    .select(['run_id', 'tenant_id'])
    .where('runner_id', '=', runnerId)
    .where('active', '=', true)
    .orderBy('run_id')
    .execute();
  const out: string[] = [];
  for (const l of leases)
    if (await requeueRun(tx, deps, l.tenant_id, l.run_id, 'runner_revoked')) out.push(l.run_id);
  return out;
}

/** Requeue the runs of leases past their expiry (a runner that stopped heartbeating). Safe on many replicas. */
export async function reapExpiredLeases(deps: Deps, limit = 100): Promise<string[]> {
  const nowMs = deps.clock().getTime();
  const due = await deps.db
    .selectFrom('runner_leases')
    .select(['run_id', 'tenant_id'])
    .where('active', '=', true)
    .where('expires_at_ms', '<', nowMs)
    .limit(limit)
    .execute();
  const out: string[] = [];
  for (const d of due) {
    const done = await withTx(deps.db, async (tx) => {
      const still = await tx
        .selectFrom('runner_leases')
        .select('run_id')
        .where('run_id', '=', d.run_id)
        .where('active', '=', true)
        .where('expires_at_ms', '<', nowMs)
        .forUpdate()
        .skipLocked()
        .executeTakeFirst();
      return still ? requeueRun(tx, deps, d.tenant_id, d.run_id, 'lease_expired') : false;
    });
    if (done) out.push(d.run_id);
  }
  return out;
}
