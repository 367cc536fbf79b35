// One registry for every trigger: event subscriptions and schedules (subscriptions to their own
// `schedule.fired` slots). Consumers read the outbox from durable cursors (scheduler/).
// A subscription acts with the authority of the API key that created it (`createdBy`): revoking that key
// disables it in the revoking transaction (`disableForRevokedKey`), it says so (`disabledReason:
// key_revoked`), it cannot be enabled again (409) — and a firing checks the key too (`fire`).

import { MAX_SESSION_TTL_SEC, SCHEDULE_FIRED, Subscription } from '@everdict/run-model';
import { CronExpressionParser } from 'cron-parser';
import { type Selectable, sql } from 'kysely';
import { ZodError } from 'zod';
import { iso, json } from '../db/numeric.js';
import type { SubscriptionsTable } from '../db/schema.js';
import { type Tx, withTx } from '../db/tx.js';
import { ControlPlaneError, notFound, type ValidationIssue } from '../errors.js';
import { assertPlaceable } from '../runners/placement.js';
import { nextSlot } from '../scheduler/schedule-ticker.js';
import type { SubscriptionService } from './api.js';
import { asControlPlaneError, toControlPlaneError, validationRefusal } from './boundary.js';
import type { Deps } from './context.js';
import { prepareCreate } from './lifecycle.js';
import { groupOfTenant, who } from './runs.js';
import {
  CreateRunInput,
  CreateSubscriptionInput,
  FiringsQuery,
  type FiringView,
  type SubscriptionView,
} from './types.js';

export type SubscriptionRow = Selectable<SubscriptionsTable>;

/** True when the API key the row's `created_by` names is revoked (no such key: a service actor, never). */
export const creatorRevoked = sql<boolean>`EXISTS (SELECT 1 FROM api_keys k
  WHERE k.id = subscriptions.created_by AND k.revoked_at IS NOT NULL)`;

/**
 * A stored firing as the API shows it: `outcome` is `created` or `refused:<code>[:<rule>]` (the consumer's
 * `recordFiring`), split into the refusal's code and rule.
 */
export function firingView(r: {
  event_id: string | number | bigint;
  run_id: string | null;
  outcome: string;
  detail: string | null;
  created_at: Date;
}): FiringView {
  const base = { eventId: String(r.event_id), at: iso(r.created_at)!, runId: r.run_id };
  if (!r.outcome.startsWith('refused:')) return { ...base, outcome: 'created', refusal: null };
  const [code = 'refused', ...rule] = r.outcome.slice('refused:'.length).split(':');
  const joined = rule.join(':');
  return {
    ...base,
    outcome: 'refused',
    refusal: { code, rule: joined === '' ? null : joined, detail: r.detail },
  };
}

/**
 * `revoked`: the creator key is revoked — the subscription is disabled whatever its flag says. `now` dates an
 * enabled schedule's next slot (`nextFireAt`).
 */
export function subscriptionView(r: SubscriptionRow, revoked: boolean, now: Date): SubscriptionView {
  const enabled = r.enabled && !revoked;
  const next = enabled && r.schedule_cron ? nextSlot(r.schedule_cron, r.schedule_tz ?? 'UTC', now) : null;
  return {
    id: r.id,
    tenantId: r.tenant_id,
    name: r.name,
    selector: { kind: r.selector_kind, filter: r.selector_filter },
    schedule: r.schedule_cron ? { cron: r.schedule_cron, timezone: r.schedule_tz ?? 'UTC' } : null,
    runSpec: r.run_spec,
    cooldownSec: r.cooldown_sec,
    maxDepth: r.max_depth,
    enabled,
    disabledReason: revoked ? 'key_revoked' : r.enabled ? null : 'disabled',
    lastFiredAt: iso(r.last_fired_at),
    nextFireAt: next ? next.toISOString() : null,
    createdBy: r.created_by,
    createdAt: iso(r.created_at)!,
  };
}

type ModelFields = Pick<
  SubscriptionRow,
  | 'id'
  | 'tenant_id'
  | 'selector_kind'
  | 'selector_filter'
  | 'run_spec'
  | 'enabled'
  | 'cooldown_sec'
  | 'max_depth'
>;

/**
 * The run-model Subscription the causation rules read (the template is projected, never the raw spec), parsed
 * by run-model's own schema — its bounds are the ones a firing meets (a session's TTL at most
 * MAX_SESSION_TTL_SEC, a session needs one, a filter of scalars), never re-stated here. Only a session carries
 * `sessionTtlMs`: another run's `ttlSec` is its own expiry, which a firing passes on as it is.
 * Throws (a ZodError, or run-model's) when the stored spec no longer parses or run-model refuses it.
 */
export function toModelSubscription(r: ModelFields): Subscription {
  const spec = CreateRunInput.parse(r.run_spec);
  return Subscription.parse({
    id: r.id,
    tenant: r.tenant_id,
    selector: { eventKind: r.selector_kind, filter: r.selector_filter },
    runSpec: {
      kind: spec.kind,
      subject: spec.subject,
      placement: spec.placement ?? { where: spec.kind === 'analysis' ? 'inline' : 'driver' },
      lifetime: spec.lifetime,
      attach: spec.attach,
    },
    ...(spec.lifetime === 'session' && spec.ttlSec !== undefined ? { sessionTtlMs: spec.ttlSec * 1000 } : {}),
    enabled: r.enabled,
    cooldownMs: r.cooldown_sec * 1000,
    maxDepth: r.max_depth,
  });
}

/**
 * run-model's field (an issue) as the request names it: `sessionTtlMs` is `runSpec.ttlSec` (its bound in
 * seconds), `cooldownMs` is `cooldownSec`, `selector.eventKind` is `selector.kind`.
 */
function requestIssue(issue: ValidationIssue): ValidationIssue {
  const [head, ...rest] = issue.path;
  if (head === 'sessionTtlMs') {
    const message =
      issue.code === 'too_big'
        ? `Too big: a session is held open at most ${MAX_SESSION_TTL_SEC} seconds (366 days)`
        : issue.message.replaceAll('sessionTtlMs', 'ttlSec');
    return { ...issue, path: ['runSpec', 'ttlSec', ...rest], message };
  }
  if (head === 'cooldownMs') return { ...issue, path: ['cooldownSec', ...rest] };
  if (head === 'selector' && rest[0] === 'eventKind')
    return { ...issue, path: ['selector', 'kind', ...rest.slice(1)] };
  return issue;
}

/**
 * At creation, the subscription as every firing will read it: what run-model's schema refuses (a session TTL
 * past MAX_SESSION_TTL_SEC, a session without one, a non-scalar filter) is the schema refusal every 400 with
 * issues is (`validationRefusal`: `out_of_range` / `validation_failed`), naming the request's body fields,
 * and nothing is saved.
 */
function checkAsFired(fields: ModelFields): void {
  try {
    toModelSubscription(fields);
  } catch (e) {
    if (!(e instanceof ZodError)) throw toControlPlaneError(e);
    throw validationRefusal(e, { in: 'body', restate: requestIssue });
  }
}

export function subscriptionService(deps: Deps): SubscriptionService {
  /** The live row and whether its creator key is revoked; locked when read in `tx`. */
  const find = async (tenant: string, id: string, tx?: Tx) => {
    const q = (tx ?? deps.db)
      .selectFrom('subscriptions')
      .selectAll()
      .select(creatorRevoked.as('creator_revoked'))
      .where('tenant_id', '=', tenant)
      .where('id', '=', id)
      .where('deleted_at', 'is', null);
    const r = await (tx ? q.forUpdate() : q).executeTakeFirst();
    if (!r) throw notFound('subscription', id);
    return r;
  };
  return {
    async create(p, raw) {
      const input = asControlPlaneError(() => CreateSubscriptionInput.parse(raw), { in: 'body' });
      await assertPlaceable(deps, p.tenantId, input.runSpec);
      const id = deps.ids('sub');
      if (input.schedule) {
        try {
          CronExpressionParser.parse(input.schedule.cron, { tz: input.schedule.timezone });
        } catch (e) {
          // The parser's message, without its `Error: ` prefix, naming what it read.
          const why = e instanceof Error ? e.message : String(e);
          throw new ControlPlaneError(
            'bad_request',
            `bad cron ${JSON.stringify(input.schedule.cron)} (timezone ${input.schedule.timezone}): ${why}`,
            { field: 'schedule.cron' },
          );
        }
      }
      const selector = input.schedule
        ? { kind: SCHEDULE_FIRED, filter: { scheduleId: id } }
        : input.selector!;
      // Checked now, as every firing will check it — never first when it fires (nothing is saved otherwise).
      checkAsFired({
        id,
        tenant_id: p.tenantId,
        selector_kind: selector.kind,
        selector_filter: selector.filter,
        run_spec: input.runSpec,
        enabled: input.enabled,
        cooldown_sec: input.cooldownSec,
        max_depth: input.maxDepth,
      });
      asControlPlaneError(
        () =>
          prepareCreate(
            deps,
            who(p),
            input.runSpec,
            input.schedule
              ? { cause: 'schedule', scheduleId: id, eventId: '0', eventKind: SCHEDULE_FIRED }
              : { cause: 'event', eventId: '0', eventKind: selector.kind },
          ),
        { in: 'body', at: ['runSpec'] },
      );
      await groupOfTenant(deps, p, input.runSpec);
      const now = deps.clock();
      const row = await deps.db
        .insertInto('subscriptions')
        .values({
          id,
          tenant_id: p.tenantId,
          name: input.name,
          selector_kind: selector.kind,
          selector_filter: json(selector.filter),
          schedule_cron: input.schedule?.cron ?? null,
          schedule_tz: input.schedule?.timezone ?? null,
          run_spec: json(input.runSpec),
          cooldown_sec: input.cooldownSec,
          max_depth: input.maxDepth,
          enabled: input.enabled,
          enabled_at: now,
          last_fired_at: null,
          created_by: p.actor,
          created_at: now,
          deleted_at: null,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      if (row.schedule_cron !== null) deps.schedulesChanged?.();
      return subscriptionView(row, false, deps.clock());
    },
    async list(p) {
      const rows = await deps.db
        .selectFrom('subscriptions')
        .selectAll()
        .select(creatorRevoked.as('creator_revoked'))
        .where('tenant_id', '=', p.tenantId)
        .where('deleted_at', 'is', null)
        .orderBy('created_at')
        .execute();
      return rows.map((r) => subscriptionView(r, r.creator_revoked, deps.clock()));
    },
    async get(p, id) {
      const r = await find(p.tenantId, id);
      return subscriptionView(r, r.creator_revoked, deps.clock());
    },
    async setEnabled(p, id, enabled) {
      // Enabling a disabled subscription starts it anew (`enabled_at` = now): it answers events from then on
      // — the consumer skips older ones, and a schedule fires no slot that passed while it was disabled — even
      // when the consumer or the ticker is behind. Enabling an enabled one keeps its time. One transaction:
      // the row is locked, and one whose creator key is revoked is not enabled again (409, nothing written).
      const view = await withTx(deps.db, async (tx) => {
        const current = await find(p.tenantId, id, tx);
        if (enabled && current.creator_revoked)
          throw new ControlPlaneError(
            'conflict',
            'the API key that created this subscription is revoked: create a new one with a live key',
            { reason: 'key_revoked' },
          );
        const r = await tx
          .updateTable('subscriptions')
          .set(
            enabled
              ? {
                  enabled,
                  enabled_at: sql<Date>`CASE WHEN enabled THEN enabled_at ELSE ${deps.clock()}::timestamptz END`,
                }
              : { enabled },
          )
          .where('id', '=', current.id)
          .returningAll()
          .executeTakeFirstOrThrow();
        return subscriptionView(r, current.creator_revoked, deps.clock());
      });
      // Committed: an enabled schedule may have a slot due sooner than the ticker knows.
      if (enabled) deps.schedulesChanged?.();
      return view;
    },
    async firings(p, id, raw) {
      const q = asControlPlaneError(() => FiringsQuery.parse(raw), { in: 'query' });
      await find(p.tenantId, id);
      // Newest first, by the primary key (subscription_id, event_id) read backwards; one more than a page
      // tells whether there is another.
      let query = deps.db
        .selectFrom('subscription_firings')
        .select(['event_id', 'run_id', 'outcome', 'detail', 'created_at'])
        .where('subscription_id', '=', id)
        .orderBy('event_id', 'desc')
        .limit(q.limit + 1);
      if (q.before !== undefined) query = query.where('event_id', '<', q.before);
      const rows = await query.execute();
      const items = rows.slice(0, q.limit).map(firingView);
      return { items, nextBefore: rows.length > q.limit ? (items.at(-1)?.eventId ?? null) : null };
    },
    async delete(p, id) {
      await find(p.tenantId, id);
      await deps.db
        .updateTable('subscriptions')
        .set({ deleted_at: deps.clock(), enabled: false })
        .where('id', '=', id)
        .execute();
    },
  };
}

/**
 * In the transaction that revokes API key `keyId` of `tenant`: the subscriptions it created stop acting with
 * its authority — disabled (their `disabledReason` becomes `key_revoked`). Answers how many.
 */
export async function disableForRevokedKey(tx: Tx, tenant: string, keyId: string): Promise<number> {
  const rows = await tx
    .updateTable('subscriptions')
    .set({ enabled: false })
    .where('tenant_id', '=', tenant)
    .where('created_by', '=', keyId)
    .where('enabled', '=', true)
    .where('deleted_at', 'is', null)
    .returning('id')
    .execute();
  return rows.length;
}
