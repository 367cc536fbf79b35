// The outbox: facts written in the same transaction as the state change that caused them. Consumers read
// in (tx, id) order, only below the oldest in-flight transaction, so a late-committing lower id is never
// skipped (ids are assigned at insert, commits land in any order).
import type { PlatformEvent } from '@everdict/run-model';
import { sql } from 'kysely';
import type { LocalDelivery, Notification } from '../db/database.js';
import { decimal, iso, json } from '../db/numeric.js';
import { prepared } from '../db/prepared.js';
import type { Executor } from '../db/tx.js';
import { SETTLED_HORIZON } from './horizon.js';

export interface NewEvent {
  tenant: string;
  kind: string;
  runId?: string | undefined;
  at: string;
  data: Record<string, unknown>;
}

export const EVENTS_CHANNEL = 'everdict_events';

/** Insert facts and NOTIFY listeners (delivered at commit) in one statement; `alsoNotify` adds a channel. */
export async function appendEvents(
  ex: Executor,
  events: readonly NewEvent[],
  alsoNotify?: string,
): Promise<string[]> {
  if (events.length === 0) return [];
  const extra = alsoNotify ? sql`, pg_notify(${alsoNotify}, '')` : sql``;
  // A named prepared statement (db/prepared.ts): one text per `alsoNotify` or not (the facts are one parameter).
  const { rows: ids } = await sql<{ id: string | number | bigint }>`${sql.raw(prepared('events_append'))}
    WITH ins AS (${insertEventsSql(events)}), n AS (SELECT pg_notify(${EVENTS_CHANNEL}, '')${extra})
    SELECT ins.id FROM ins, n ORDER BY ins.id`.execute(ex);
  return ids.map((r) => decimal(r.id));
}

/** `pg_notify(…)` calls, comma-separated, for a SELECT list: a channel alone (payload '') or [channel, payload]. */
export function notifyCalls(notifies: readonly Notification[]) {
  return sql.join(
    notifies.map((n) =>
      typeof n === 'string' ? sql`pg_notify(${n}, '')` : sql`pg_notify(${n[0]}, ${n[1]})`,
    ),
  );
}

/**
 * NOTIFY after a durable write has committed, in its own tiny transaction that commits asynchronously
 * (`synchronous_commit = off` for it alone). PostgreSQL serializes every NOTIFYing commit on one cluster-wide
 * lock (queue entries go in commit order) and holds it until the commit returns — through the WAL flush of a
 * synchronous commit. A create or settle that NOTIFYs in its own statement therefore holds that lock for an
 * fsync, and every other NOTIFYing commit (claims, other creates and settles) queues behind it and cannot share
 * its flush. Sent here, the lock is held for an unflushed commit record only. A crash can lose such a
 * notification — never the write it announces: listeners also poll (wake-loop.ts). Never throws: a lost
 * notification costs a poll interval at most. `[channel, payload]` or a channel with an empty payload.
 */
export function notifyAfterCommit(
  ex: Executor,
  notifies: readonly Notification[],
  onError?: (e: unknown) => void,
  /**
   * This process's LISTEN side: when no other process listens on the database (db/listener-presence.ts), the
   * notifications are delivered to this process's listeners in memory and no statement is sent.
   */
  ldb?: LocalDelivery,
): Promise<void> {
  if (notifies.length === 0) return Promise.resolve();
  if (ldb?.alone?.() === true && ldb.deliverLocally) {
    ldb.deliverLocally(notifies);
    return Promise.resolve();
  }
  // A named prepared statement (db/prepared.ts): one text per shape of `notifies` (channels are parameters),
  // parsed once per pooled connection instead of once per batch.
  return sql`${sql.raw(prepared('notify_after'))}
    SELECT set_config('synchronous_commit', 'off', true), ${notifyCalls(notifies)}`
    .execute(ex)
    .then(
      () => undefined,
      (e: unknown) => onError?.(e),
    );
}

/**
 * `INSERT INTO events … RETURNING id` for a CTE of a larger statement (the caller NOTIFYs). The facts go in as
 * one jsonb parameter, in order: the SQL text is the same for any number of facts (preparable).
 */
export function insertEventsSql(events: readonly NewEvent[]) {
  const docs = events.map((e) => ({ t: e.tenant, k: e.kind, r: e.runId ?? null, d: e.data, a: e.at }));
  return sql<{
    id: string | number | bigint;
  }>`INSERT INTO events (tenant_id, kind, run_id, payload, created_at)
    SELECT e->>'t', e->>'k', e->>'r', e->'d', (e->>'a')::timestamptz
    FROM jsonb_array_elements(${json(docs)}::jsonb) WITH ORDINALITY AS x(e, ord)
    ORDER BY x.ord
    RETURNING id`;
}

interface EventRowLike {
  id: string | number | bigint;
  tenant_id: string;
  kind: string;
  run_id: string | null;
  payload: Record<string, unknown>;
  created_at: Date | string;
}

export function toPlatformEvent(r: EventRowLike): PlatformEvent {
  const e: PlatformEvent = {
    id: decimal(r.id),
    tenant: r.tenant_id,
    kind: r.kind,
    at: iso(r.created_at)!,
    data: r.payload as PlatformEvent['data'],
  };
  if (r.run_id) e.runId = r.run_id;
  return e;
}

export async function listEvents(
  ex: Executor,
  tenant: string,
  opts: { after?: string | undefined; runId?: string | undefined; kind?: string | undefined; limit: number },
): Promise<PlatformEvent[]> {
  let q = ex.selectFrom('events').selectAll().where('tenant_id', '=', tenant);
  if (opts.runId) q = q.where('run_id', '=', opts.runId);
  if (opts.kind) q = q.where('kind', '=', opts.kind);
  if (opts.after) q = q.where(sql<boolean>`id > ${opts.after}::bigint`);
  const rows = await q.orderBy('id').limit(opts.limit).execute();
  return rows.map(toPlatformEvent);
}

export interface OutboxPosition {
  tx: string;
  id: string;
}

/** Events after `pos` whose transactions are all settled (tx below this database's horizon: horizon.ts). */
export async function readSettled(ex: Executor, pos: OutboxPosition, limit: number) {
  const { rows } = await sql<EventRowLike & { tx: string | number | bigint }>`
    SELECT id, tx, tenant_id, kind, run_id, payload, created_at FROM events
    WHERE (tx, id) > (${pos.tx}::bigint, ${pos.id}::bigint)
      AND tx < ${SETTLED_HORIZON}
    ORDER BY tx, id LIMIT ${limit}`.execute(ex);
  return rows.map((r) => ({ event: toPlatformEvent(r), pos: { tx: decimal(r.tx), id: decimal(r.id) } }));
}

/** A fact with its place in both orders (the live feed's cursors). */
export interface PlacedEvent {
  readonly event: PlatformEvent;
  readonly tx: bigint;
  readonly id: bigint;
}

interface FeedFilter {
  readonly runId?: string | undefined;
  readonly kind?: string | undefined;
}

const feedFilter = (f: FeedFilter) =>
  sql`${f.runId ? sql`AND run_id = ${f.runId}` : sql``} ${f.kind ? sql`AND kind = ${f.kind}` : sql``}`;

const placed = (r: EventRowLike & { tx: string | number | bigint }): PlacedEvent => ({
  event: toPlatformEvent(r),
  tx: BigInt(r.tx),
  id: BigInt(r.id),
});

/** A tenant's facts after id `after`, in id order, with their transactions (the live feed's id cursor). */
export async function readAfterId(
  ex: Executor,
  tenant: string,
  after: string,
  filter: FeedFilter,
  limit: number,
): Promise<PlacedEvent[]> {
  const { rows } = await sql<EventRowLike & { tx: string | number | bigint }>`
    SELECT id, tx, tenant_id, kind, run_id, payload, created_at FROM events
    WHERE tenant_id = ${tenant} AND id > ${after}::bigint ${feedFilter(filter)}
    ORDER BY id LIMIT ${limit}`.execute(ex);
  return rows.map(placed);
}

/** A tenant's facts after `pos` in (tx, id) order whose transactions are all settled (its settled cursor). */
export async function readSettledOf(
  ex: Executor,
  tenant: string,
  pos: OutboxPosition,
  filter: FeedFilter,
  limit: number,
): Promise<PlacedEvent[]> {
  const { rows } = await sql<EventRowLike & { tx: string | number | bigint }>`
    SELECT id, tx, tenant_id, kind, run_id, payload, created_at FROM events
    WHERE (tx, id) > (${pos.tx}::bigint, ${pos.id}::bigint)
      AND tx < ${SETTLED_HORIZON}
      AND tenant_id = ${tenant} ${feedFilter(filter)}
    ORDER BY tx, id LIMIT ${limit}`.execute(ex);
  return rows.map(placed);
}

/** A tenant's highest fact id and the snapshot it was read in (one statement: one snapshot). */
export async function feedStart(
  ex: Executor,
  tenant: string,
): Promise<{ maxId: string; snapshot: { xmin: bigint; xmax: bigint; running: Set<bigint> } }> {
  const { rows } = await sql<{ m: string | null; xmin: string; xmax: string; xip: string[] }>`
    SELECT (SELECT max(id) FROM events WHERE tenant_id = ${tenant})::text AS m,
      pg_snapshot_xmin(s)::text AS xmin, pg_snapshot_xmax(s)::text AS xmax,
      ARRAY(SELECT x::text FROM pg_snapshot_xip(s) AS x) AS xip
    FROM pg_current_snapshot() AS s`.execute(ex);
  const r = rows[0]!;
  return {
    maxId: r.m ?? '0',
    snapshot: { xmin: BigInt(r.xmin), xmax: BigInt(r.xmax), running: new Set(r.xip.map((x) => BigInt(x))) },
  };
}
