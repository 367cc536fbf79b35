// Reads the outbox from its durable cursor (one consumer name, one row lock: replicas take turns), matches
// subscriptions, and creates runs stamped with their cause — in the same transaction that advances the
// cursor, so each (subscription, event) fires exactly once. Causation rules come from run-model.
import { causationCheck, matchEvent, type PlatformEvent, SCHEDULE_FIRED } from '@everdict/run-model';
import { sql } from 'kysely';
import { atomically } from '../admission-store/sql/scope.js';
import { prepared } from '../db/prepared.js';
import { type Tx, withTx } from '../db/tx.js';
import { isControlPlaneError } from '../errors.js';
import { readSettled } from '../ledger/events.js';
import { SETTLED_HORIZON } from '../ledger/horizon.js';
import { rowToRun, selectRunRows } from '../ledger/runs.js';
import { assertPlaceable } from '../runners/placement.js';
import type { Deps } from '../services/context.js';
import { createRunTx } from '../services/lifecycle.js';
import { unstorable } from '../services/storable-guard.js';
import { creatorRevoked, toModelSubscription } from '../services/subscriptions.js';
import { CreateRunInput } from '../services/types.js';

export const SUBSCRIPTIONS_CONSUMER = 'subscriptions';

/**
 * The trigger loop's first (and, without subscriptions, only) statement of a cycle. When no subscription is
 * enabled anywhere, nothing could fire: the cursor moves past every settled event in this one statement
 * (forward only, created if missing), so the outbox costs no transaction and no event read. Otherwise it
 * answers whether any settled event is past the cursor (`consumeOnce` then does the work).
 *
 * The statement commits asynchronously (`synchronous_commit = off` for it alone): a skip is not worth an
 * fsync, and at one cycle per 50 ms under load its flush competed with every create's and settle's. What a
 * crash can lose is the last skips; after restart the cursor is behind and the next cycle skips again. It
 * cannot make a subscription fire for an event older than itself: a subscription is created by a synchronous
 * commit, which flushes the WAL up to itself — every skip committed before it included.
 */
export async function skipOrPending(deps: Deps): Promise<'skipped' | 'pending' | 'idle'> {
  // A named prepared statement (db/prepared.ts): it runs once per event batch (a completion batch's events
  // wake it), and unnamed its planning cost more than its execution.
  const { rows } = await sql<{
    subscribed: boolean;
    pending: boolean;
  }>`${sql.raw(prepared('subscriptions_skip'))}
    WITH subscribed AS (
      SELECT EXISTS (SELECT 1 FROM subscriptions WHERE enabled AND deleted_at IS NULL) AS yes),
    cur AS (
      SELECT COALESCE(max(c.tx), 0) AS tx, COALESCE(max(c.event_id), 0) AS id FROM consumer_cursors c
      WHERE c.consumer = ${SUBSCRIPTIONS_CONSUMER}),
    last AS (
      SELECT e.tx, e.id FROM events e, cur
      WHERE (e.tx, e.id) > (cur.tx, cur.id)
        AND e.tx < ${SETTLED_HORIZON}
      ORDER BY e.tx DESC, e.id DESC LIMIT 1),
    skip AS (
      INSERT INTO consumer_cursors (consumer, tx, event_id, updated_at)
      SELECT ${SUBSCRIPTIONS_CONSUMER}, last.tx, last.id, ${deps.clock()}::timestamptz
      FROM last, subscribed WHERE NOT subscribed.yes
      ON CONFLICT (consumer) DO UPDATE
        SET tx = EXCLUDED.tx, event_id = EXCLUDED.event_id, updated_at = EXCLUDED.updated_at
        WHERE (consumer_cursors.tx, consumer_cursors.event_id) < (EXCLUDED.tx, EXCLUDED.event_id)
      RETURNING 1),
    async AS (SELECT set_config('synchronous_commit', 'off', true) AS s)
    SELECT (SELECT yes FROM subscribed) AS subscribed, EXISTS (SELECT 1 FROM last) AS pending,
           (SELECT count(*) FROM skip) AS skipped, (SELECT s FROM async) AS async`.execute(deps.db);
  const r = rows[0];
  if (!r?.pending) return 'idle';
  return r.subscribed ? 'pending' : 'skipped';
}

/** Process up to `limit` settled events; returns how many were consumed (0 = caught up or another replica holds the cursor). */
export async function consumeOnce(deps: Deps, limit = 200): Promise<number> {
  return withTx(deps.db, async (tx) => {
    await tx
      .insertInto('consumer_cursors')
      .values({ consumer: SUBSCRIPTIONS_CONSUMER, tx: 0, event_id: 0, updated_at: deps.clock() })
      .onConflict((oc) => oc.column('consumer').doNothing())
      .execute();
    const cursor = await tx
      .selectFrom('consumer_cursors')
      .selectAll()
      .where('consumer', '=', SUBSCRIPTIONS_CONSUMER)
      .forUpdate()
      .skipLocked()
      .executeTakeFirst();
    if (!cursor) return 0;
    const batch = await readSettled(tx, { tx: String(cursor.tx), id: String(cursor.event_id) }, limit);
    if (batch.length === 0) return 0;
    const kinds = [...new Set(batch.map((b) => b.event.kind))];
    const prefixes = new Set(
      kinds.flatMap((k) => k.split('.').map((_, i, a) => `${a.slice(0, i).join('.')}${i ? '.' : ''}*`)),
    );
    const subs = await tx
      .selectFrom('subscriptions')
      .selectAll()
      .where('enabled', '=', true)
      .where('deleted_at', 'is', null)
      .where('selector_kind', 'in', [...kinds, ...prefixes])
      .execute();
    for (const { event } of batch) {
      for (const row of subs) {
        // A subscription answers events from its creation, or its latest re-enabling, on (`enabled_at`): a
        // consumer that is behind (a restart's backlog, a cycle's lag) never fires it for history older than
        // itself, nor for what happened while it was disabled. (`fire` checks it again on the locked row.)
        if (beforeEnabled(event, row.enabled_at)) continue;
        const selector = { eventKind: row.selector_kind, filter: row.selector_filter as Selector['filter'] };
        if (!matchEvent({ tenant: row.tenant_id, selector }, event)) continue;
        await fire(deps, tx, row.id, modelOf(row), event);
      }
    }
    const last = batch.at(-1)!.pos;
    await tx
      .updateTable('consumer_cursors')
      .set({ tx: last.tx, event_id: last.id, updated_at: deps.clock() })
      .where('consumer', '=', SUBSCRIPTIONS_CONSUMER)
      .execute();
    return batch.length;
  });
}

type Selector = ReturnType<typeof toModelSubscription>['selector'];

/** Is `event` older than the moment the subscription was (last) enabled — one it does not answer? */
const STALE_SPEC = 'its stored run spec no longer parses (written by an older version): create it again';

const beforeEnabled = (event: PlatformEvent, enabledAt: Date): boolean =>
  Date.parse(event.at) < enabledAt.getTime();

/** The run-model subscription of a stored row, or null when its spec no longer parses. */
function modelOf(row: Parameters<typeof toModelSubscription>[0]) {
  try {
    return toModelSubscription(row);
  } catch {
    return null;
  }
}

/** The most characters of a refusal's words a firing keeps. */
const DETAIL_CHARS = 500;

/**
 * One (subscription, event) outcome: the run it created, or why not (`refused:<code>[:<rule>]`, and the refusal
 * in words as `detail`). Written once; read back by `GET /subscriptions/:id/firings`.
 */
function recordFiring(
  deps: Deps,
  tx: Tx,
  subId: string,
  event: PlatformEvent,
  runId: string | null,
  outcome: string,
  detail: string | null = null,
) {
  return tx
    .insertInto('subscription_firings')
    .values({
      subscription_id: subId,
      event_id: event.id,
      run_id: runId,
      outcome,
      detail: detail === null ? null : detail.slice(0, DETAIL_CHARS),
      created_at: deps.clock(),
    })
    .onConflict((oc) => oc.columns(['subscription_id', 'event_id']).doNothing())
    .execute();
}

/**
 * Fire one matched subscription for one event, or record why not. `sub` is the batch's reading of it (null when
 * its spec no longer parses). The row is locked and read again first, in one statement: a subscription
 * disabled, deleted or re-enabled since the batch listed it (their commits are visible to this statement, or it
 * waits for them) is taken as it is now — it does not fire, and nothing is recorded, as for one never listed.
 */
async function fire(
  deps: Deps,
  tx: Tx,
  subId: string,
  sub: ReturnType<typeof toModelSubscription> | null,
  event: PlatformEvent,
) {
  const current = await tx
    .selectFrom('subscriptions')
    .select(['last_fired_at', 'run_spec', 'created_by', 'enabled', 'deleted_at', 'enabled_at'])
    .select(creatorRevoked.as('creator_revoked'))
    .where('id', '=', subId)
    .forUpdate()
    .executeTakeFirst();
  if (!current?.enabled || current.deleted_at !== null || beforeEnabled(event, current.enabled_at)) return;
  // It acts with its creator key's authority: a revoked key fires nothing (revoking disables the key's
  // subscriptions in its transaction; this covers one revoked before that rule, and says why).
  if (current.creator_revoked) {
    await recordFiring(
      deps,
      tx,
      subId,
      event,
      null,
      'refused:key_revoked',
      `the API key that created it (${current.created_by}) is revoked`,
    );
    return;
  }
  // A stored spec that no longer parses (written by an older version) is skipped with a recorded
  // refusal: the cursor moves on, and every other subscription, of every tenant, still fires.
  if (!sub) {
    await recordFiring(deps, tx, subId, event, null, 'refused:invalid_spec', STALE_SPEC);
    return;
  }
  const causing = event.runId
    ? await selectRunRows(tx).selectAll().where('id', '=', event.runId).executeTakeFirst()
    : undefined;
  // The cooldown is measured between the events that fire the subscription, not between the moments a
  // consumer got to them: a backlog drained after a restart refuses what a live consumer would have, no
  // more. The (tx, id) order can run ahead of event time by a commit's latency; such an event counts as
  // at the last firing.
  const eventMs = Date.parse(event.at);
  const lastMs = current.last_fired_at?.getTime();
  const verdict = causationCheck({
    sub,
    event,
    ...(causing ? { causingRun: rowToRun(causing) } : {}),
    ...(lastMs !== undefined ? { lastFiredAt: new Date(Math.min(lastMs, eventMs)).toISOString() } : {}),
    now: event.at,
  });
  const record = (runId: string | null, outcome: string, detail?: string) =>
    recordFiring(deps, tx, subId, event, runId, outcome, detail);
  if (!verdict.allowed) {
    await record(null, `refused:${verdict.reason}`, verdict.detail);
    return;
  }
  const parsed = CreateRunInput.safeParse(current.run_spec);
  if (!parsed.success || unstorable(parsed.data) !== null) {
    await record(null, 'refused:invalid_spec', STALE_SPEC);
    return;
  }
  const spec = parsed.data;
  const scheduleId =
    event.kind === SCHEDULE_FIRED && typeof event.data.scheduleId === 'string'
      ? event.data.scheduleId
      : undefined;
  try {
    // The durable runner check at the firing too (not only when the subscription was made): a runner kind
    // no runner of the tenant (or a shared one) takes any more is a recorded refusal, never a run queued
    // forever.
    await assertPlaceable(deps, sub.tenant, spec, tx);
    const { row } = await atomically(tx, (t) =>
      createRunTx(
        t,
        deps,
        { tenant: sub.tenant, actor: current.created_by },
        { ...spec, requestId: `sub:${subId}:${event.id}` },
        {
          cause: scheduleId ? 'schedule' : 'event',
          eventId: event.id,
          eventKind: event.kind,
          subscriptionId: subId,
          ...(scheduleId ? { scheduleId } : {}),
          ...(causing ? { causedByRunId: causing.id } : {}),
          maxCausalDepth: sub.maxDepth,
        },
      ),
    );
    await tx
      .updateTable('subscriptions')
      .set({ last_fired_at: new Date(Math.max(lastMs ?? eventMs, eventMs)) })
      .where('id', '=', subId)
      .execute();
    await record(row.id, 'created');
  } catch (e) {
    if (!isControlPlaneError(e)) throw e;
    await record(null, `refused:${e.code}:${String(e.details.rule ?? '')}`, e.message);
  }
}
