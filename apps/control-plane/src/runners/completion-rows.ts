// A completion batch's rows: what it reads once for all its items (the runs locked, their leases with this
// epoch's journal rows, their records' segments) and its tail (the events, the audit links and the leases'
// release in one statement) — the SQL of completion.ts's transaction, which checks and settles each item.
//
// A completion and its runner's revoke serialize on the runner's row: the completion holds it FOR KEY SHARE from
// its first statement to its commit (`holdRunner`, or the first CTE of `prefetchBatch`), the revoke locks it FOR
// UPDATE (registry.ts) before it marks the runner's leases revoked. A completion that comes first settles and
// drops its leases before the revoke reads them; one that comes after reads its lease as the revoke left it
// (`REVOKED_EXPIRY_MS`: 409 `stale_lease`). FOR KEY SHARE does not wait for a grant's FOR NO KEY UPDATE nor a
// heartbeat's UPDATE of the row. Lock order: the runner's row, then the runs (by id) — a grant's order too
// (leases.ts) — then the rest as admission-store/sql/settle.ts orders it.
import type { WireSegment } from '@everdict/runrecord';
import { sql } from 'kysely';
import { prepared } from '../db/prepared.js';
import type { Tx } from '../db/tx.js';
import { REVOKED_EXPIRY_MS, staleLease } from '../leases/store.js';
import { EVENTS_CHANNEL, insertEventsSql, type NewEvent } from '../ledger/events.js';
import { type RunRow, selectRunRows } from '../ledger/runs.js';
import { AUDIT_LOCK_CLASS, type RunnerAuditLinks } from '../log/audit-chain.js';
import type { RunnerIdentity } from './registry.js';

/** A run's lease and this epoch's journal row, as `leaseJournal` reads them (absent: no lease). */
export interface LeaseJournalRow {
  epoch: string | number;
  holder: string;
  expires_at_ms: string | number;
  seq_from: number | null;
  event_count: number | null;
}

/**
 * 409 `stale_lease` unless the runner holds the run's current lease at `epoch` — not ended by the runner's
 * revocation (a completion sent before it was revoked) — else where its journal sits.
 */
export function journalOf(
  r: LeaseJournalRow | undefined,
  runner: RunnerIdentity,
  runId: string,
  epoch: number,
): { from: number; count: number } {
  const current = r ? Number(r.epoch) : null;
  if (current !== epoch || r?.holder !== runner.id || Number(r.expires_at_ms) === REVOKED_EXPIRY_MS)
    throw staleLease(runId, epoch, current);
  return { from: Number(r.seq_from ?? 0), count: Number(r.event_count ?? 0) };
}

/**
 * The runner's row FOR KEY SHARE until the commit: a revoke (FOR UPDATE) waits for this completion, or this
 * completion for the revoke (see the header). First in a single completion's transaction.
 */
export async function holdRunner(tx: Tx, runnerId: string): Promise<void> {
  await sql`${sql.raw(prepared('completion_runner'))}
    SELECT 1 FROM runners WHERE id = ${runnerId} FOR KEY SHARE`.execute(tx);
}

/**
 * Where this epoch's journal sits in the run's trajectory, read with the check that the runner holds the
 * run's current lease at `epoch` — ONE statement (else 409 `stale_lease`). The run row is locked first
 * (the lease rule's lock order: the sweep locks it before it requeues), so the lease stays until this
 * transaction releases it (`releaseLeases`, once per batch, at its end).
 */
export async function leaseJournal(
  tx: Tx,
  runner: RunnerIdentity,
  runId: string,
  epoch: number,
): Promise<{ from: number; count: number }> {
  const { rows } =
    await sql<LeaseJournalRow>`SELECT l.epoch, l.holder, l.expires_at_ms, j.seq_from, j.event_count FROM run_leases l
    LEFT JOIN runner_journals j ON j.run_id = l.run_id AND j.epoch = ${epoch}
    WHERE l.run_id = ${runId}`.execute(tx);
  return journalOf(rows[0], runner, runId, epoch);
}

/** What a batch read once for one of its items: the run row (locked), its lease and journal, its record. */
export interface Prefetched {
  readonly row: RunRow | undefined;
  readonly lease: LeaseJournalRow | undefined;
  readonly segments: WireSegment[];
}

/**
 * The reads `settleCompletion` makes per item, made once for a whole batch — two statements instead of three
 * per item: the run rows locked FOR UPDATE in run id order (the order `releaseLeases` and the heartbeat's
 * renewals take), then — in ONE statement, after every lock — their leases with each item's epoch's journal
 * row and their records' segments. Each run's first item only (a run named twice reads again for its later
 * items, after its first settled). The same rows the per-item reads would see: every run row is locked before
 * its lease and record are read (the second statement's snapshot is taken after the first returned), and both
 * change only under that lock. A batch of one reads this way too (2 statements, not 3).
 */
export async function prefetchBatch(
  tx: Tx,
  batch: readonly { readonly runId: string; readonly input: { readonly epoch: number } }[],
  audit: { readonly runnerId: string; readonly key: string; readonly links: RunnerAuditLinks },
): Promise<Map<string, Prefetched>> {
  const firsts = new Map<string, number>();
  for (const c of batch) if (!firsts.has(c.runId)) firsts.set(c.runId, c.input.epoch);
  const ids = [...firsts.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  // Named prepared statements (db/prepared.ts): the same texts for any batch size (ids are one array), so
  // each pooled connection plans them once. The rows as `selectRunRows` reads them (the run with its slot's
  // depth and start), both locked.
  // The same statement then takes the runner key's audit lock (log/audit-chain.ts), after every run lock (the
  // lock order of a single completion: its run, then the key): `au` aggregates the locked rows before it locks.
  // (A one-time filter: evaluated before the outer scan, even when no run is found.)
  // Before every run lock, the runner's row FOR KEY SHARE (`holdRunner`: a revoke serializes with this batch),
  // the runs' locks behind it through a one-time filter.
  const { rows } = await sql<RunRow>`${sql.raw(prepared('completion_lock'))}
    WITH rn AS MATERIALIZED (SELECT 1 FROM runners WHERE id = ${audit.runnerId} FOR KEY SHARE),
      locked AS MATERIALIZED (SELECT * FROM (SELECT r.*, s.depth AS causal_depth, s.started_at AS started_ms
        FROM runs r JOIN adm_slots s ON s.tenant = r.tenant_id AND s.run_id = r.id) AS runs
      WHERE id = ANY(${ids}::text[]) AND (SELECT count(*) FROM rn) >= 0 ORDER BY id FOR UPDATE),
      au AS MATERIALIZED (SELECT pg_advisory_xact_lock(${AUDIT_LOCK_CLASS}::int, hashtext(${audit.key}))::text AS done
        FROM (SELECT count(*) AS n FROM locked) c)
    SELECT locked.* FROM locked WHERE (SELECT count(*) FROM au) >= 0 ORDER BY id`.execute(tx);
  // With them, the key's last audit link — read after its lock (this statement's snapshot is taken after the
  // one above returned), as `RunnerAuditLinks.link` reads it.
  const { rows: reads } = await sql<
    {
      run_id: string;
      epoch: string | number | null;
      holder: string | null;
      expires_at_ms: string | number | null;
    } & Omit<LeaseJournalRow, 'epoch' | 'holder' | 'expires_at_ms'> & {
        segments: WireSegment[] | null;
        audit_seq: string | number | null;
        audit_address: string | null;
        audit_linked: boolean | null;
      }
  >`${sql.raw(prepared('completion_reads'))}
    SELECT s.run_id, l.epoch, l.holder, l.expires_at_ms, j.seq_from, j.event_count,
      (SELECT json_agg(g.payload ORDER BY g.idx) FROM record_segments g WHERE g.run_id = s.run_id) AS segments,
      a.seq AS audit_seq, a.address AS audit_address, a.linked AS audit_linked
    FROM unnest(${ids}::text[], ${ids.map((id) => firsts.get(id)!)}::bigint[]) AS s(run_id, epoch)
    LEFT JOIN run_leases l ON l.run_id = s.run_id
    -- run_id = ANY(ids) besides the join: the journals' primary key even in a generic plan made on a small table
    LEFT JOIN runner_journals j ON j.run_id = ANY(${ids}::text[]) AND j.run_id = s.run_id AND j.epoch = s.epoch
    LEFT JOIN (SELECT seq, address, EXISTS (SELECT 1 FROM runner_audit WHERE runner_key = ${audit.key}
        AND audit_prev IS NOT NULL) AS linked
      FROM runner_audit WHERE runner_key = ${audit.key} ORDER BY seq DESC LIMIT 1) a ON true`.execute(tx);
  const a = reads[0];
  audit.links.primed(
    a && a.audit_seq !== null && a.audit_address !== null
      ? { seq: Number(a.audit_seq), address: a.audit_address, linked: a.audit_linked === true }
      : null,
  );
  const rowOf = new Map(rows.map((r) => [r.id, r]));
  const readOf = new Map(reads.map((r) => [r.run_id, r]));
  return new Map(
    ids.map((id) => {
      const r = readOf.get(id);
      const lease: LeaseJournalRow | undefined =
        r && r.epoch !== null && r.holder !== null && r.expires_at_ms !== null
          ? {
              epoch: r.epoch,
              holder: r.holder,
              expires_at_ms: r.expires_at_ms,
              seq_from: r.seq_from,
              event_count: r.event_count,
            }
          : undefined;
      return [id, { row: rowOf.get(id), lease, segments: r?.segments ?? [] }];
    }),
  );
}

/** Drops the settled runs' leases — one statement, in run id order — just before the commit. */
export async function releaseLeases(tx: Tx, settled: readonly Settled[]): Promise<void> {
  if (settled.length === 0) return;
  await sql`${sql.raw(prepared('completion_release'))} ${deleteLeasesSql(settled)}`.execute(tx);
}

type Settled = { readonly runId: string; readonly epoch: number };

/** DELETE of the settled runs' leases (at their epochs), in run id order: the lock order of the lease rows. */
function deleteLeasesSql(settled: readonly Settled[]) {
  const sorted = [...settled].sort((a, b) => (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0));
  return sql`DELETE FROM run_leases l
    USING unnest(${sorted.map((s) => s.runId)}::text[], ${sorted.map((s) => s.epoch)}::bigint[]) AS s(run_id, epoch)
    WHERE l.run_id = s.run_id AND l.epoch = s.epoch`;
}

/**
 * A batch's tail in ONE statement, just before the commit: the runs' events (in order, NOTIFYed at the commit
 * as `appendEvents` does — only when there are some), the runner's audit links, and the settled runs' leases
 * dropped in run id order. Three tables no other part of the statement reads; the order of the three inserts
 * and the delete within the transaction changes nothing another transaction can see.
 */
export async function finishBatch(
  tx: Tx,
  events: readonly NewEvent[],
  links: RunnerAuditLinks,
  settled: readonly Settled[],
): Promise<void> {
  await sql`${sql.raw(prepared('completion_finish'))}
    WITH ev AS (${insertEventsSql(events)}),
      au AS (${links.takeInsert()}),
      rl AS (${deleteLeasesSql(settled)}),
      n AS (SELECT pg_notify(${EVENTS_CHANNEL}, '') WHERE ${events.length > 0}::boolean)
    SELECT (SELECT count(*) FROM ev) AS events, (SELECT count(*) FROM n) AS notified`.execute(tx);
}

/** The run's row locked (FOR UPDATE, with its slot's columns) by id alone. */
export const lockRunById = (tx: Tx, runId: string) =>
  selectRunRows(tx).selectAll().where('id', '=', runId).forUpdate().executeTakeFirst();
