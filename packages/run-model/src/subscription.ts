// Subscription: event selector → run spec, and the causation rules that keep triggers from running away.
import { z } from 'zod';
import { RunModelError } from './errors.js';
import type { PlatformEvent } from './facts.js';
import { SCHEDULE_FIRED } from './facts.js';
import { EventKind } from './origin.js';
import { Id, type JsonValue, ownProtoKeys, Timestamp, toMillis } from './primitives.js';
import { type Run, type RunSpecInput, RunTemplate } from './run.js';
import { MAX_SESSION_TTL_SEC } from './session.js';

/** `run.settled` exactly, or a prefix wildcard such as `run.*` or `*`. */
export const EventSelectorKind = z.union([EventKind, z.string().regex(/^([a-z][a-z0-9_]*\.)*\*$/)]);

/**
 * Field equality on the event's `data`; keys are dotted paths (`error.code`), values JSON scalars. A
 * `__proto__` key is kept like any other (dropping it would widen the filter to match more events).
 */
export const EventFilter = ownProtoKeys(
  z.record(z.string().min(1), z.union([z.string(), z.number(), z.boolean(), z.null()])),
);
export type EventFilter = z.infer<typeof EventFilter>;

export const EventSelector = z.strictObject({
  eventKind: EventSelectorKind,
  filter: EventFilter.default({}),
});
export type EventSelector = z.infer<typeof EventSelector>;

export const Subscription = z
  .strictObject({
    id: Id,
    tenant: Id,
    selector: EventSelector,
    /** The run each matching event creates, minus its origin (stamped per firing by `runSpecFor`). */
    runSpec: RunTemplate,
    /**
     * A session run's lifetime from the firing; required when runSpec.lifetime is session. At most
     * MAX_SESSION_TTL_SEC (366 days): a longer one is no session, and past the date range it broke `runSpecFor`.
     */
    sessionTtlMs: z
      .int()
      .positive()
      .max(MAX_SESSION_TTL_SEC * 1000)
      .optional(),
    enabled: z.boolean(),
    /** Minimum gap between two firings of this subscription. */
    cooldownMs: z.int().nonnegative(),
    /** The deepest causal depth a run created by this subscription may have (a root run has depth 0). */
    maxDepth: z.int().nonnegative(),
    createdAt: Timestamp.optional(),
  })
  .superRefine((sub, ctx) => {
    if (
      sub.runSpec.lifetime === 'session' &&
      sub.sessionTtlMs === undefined &&
      sub.runSpec.expiresAt === undefined
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['sessionTtlMs'],
        message: 'a session run template needs sessionTtlMs',
      });
    }
  });
export type Subscription = z.output<typeof Subscription>;
export type SubscriptionInput = z.input<typeof Subscription>;

function kindMatches(selector: string, kind: string): boolean {
  if (selector === '*') return true;
  if (selector.endsWith('.*')) return kind.startsWith(selector.slice(0, -1));
  return selector === kind;
}

function read(data: Record<string, JsonValue>, path: string): JsonValue | undefined {
  let here: JsonValue | undefined = data;
  for (const key of path.split('.')) {
    if (here === null || typeof here !== 'object' || Array.isArray(here)) return undefined;
    here = here[key];
  }
  return here;
}

/** Does the event fall under the subscription's selector? Same tenant, kind, every filter field equal. */
export function matchEvent(sub: Pick<Subscription, 'tenant' | 'selector'>, event: PlatformEvent): boolean {
  if (sub.tenant !== event.tenant) return false;
  if (!kindMatches(sub.selector.eventKind, event.kind)) return false;
  return Object.entries(sub.selector.filter).every(([path, want]) => read(event.data, path) === want);
}

export type CausationRefusal = 'disabled' | 'self_cause' | 'cooldown';
export type CausationVerdict =
  | { allowed: true }
  | { allowed: false; reason: CausationRefusal; detail: string };

export interface CausationCheck {
  sub: Subscription;
  event: PlatformEvent;
  /** The run the event is about, when the event came from a run. */
  causingRun?: Pick<Run, 'id' | 'kind' | 'subject' | 'origin'>;
  /** When this subscription last fired, if ever. */
  lastFiredAt?: string;
  now: string;
}

function agentOf(run: { kind: string; subject: unknown }): string | undefined {
  if (run.kind !== 'agent' || typeof run.subject !== 'object' || run.subject === null) return undefined;
  const id = (run.subject as { agentId?: unknown }).agentId;
  return typeof id === 'string' ? id : undefined;
}

/**
 * May this subscription create a run for this event? Checked in order, each from data alone:
 *   disabled        the subscription is switched off
 *   self_cause      the causing run was created by this same subscription, or is a run of the very
 *                   agent the subscription would activate (an agent never wakes itself)
 *   cooldown        the subscription fired less than cooldownMs ago
 * Causal depth is not checked here: the subscription's `maxDepth` goes to admission with the run it
 * creates (`maxCausalDepth` of the admission request), whose one depth guard refuses past it.
 */
export function causationCheck(check: CausationCheck): CausationVerdict {
  const { sub, causingRun } = check;
  if (!sub.enabled)
    return { allowed: false, reason: 'disabled', detail: `subscription ${sub.id} is disabled` };
  if (causingRun) {
    if (causingRun.origin.subscriptionId === sub.id) {
      return {
        allowed: false,
        reason: 'self_cause',
        detail: `run ${causingRun.id} was created by ${sub.id}`,
      };
    }
    const agent = agentOf(causingRun);
    if (agent !== undefined && agent === agentOf(sub.runSpec)) {
      return { allowed: false, reason: 'self_cause', detail: `agent ${agent} would wake itself` };
    }
  }
  if (check.lastFiredAt !== undefined) {
    const since = toMillis(check.now) - toMillis(check.lastFiredAt);
    // Fails closed: an unreadable timestamp (NaN) is "within the cooldown", never a way around it.
    if (!(since >= sub.cooldownMs)) {
      return {
        allowed: false,
        reason: 'cooldown',
        detail: `fired ${since} ms ago, cooldown ${sub.cooldownMs} ms`,
      };
    }
  }
  return { allowed: true };
}

/** A refused verdict as the package's error (`causation_refused`, 429), for callers that throw. */
export function causationError(
  verdict: Extract<CausationVerdict, { allowed: false }>,
  subId: string,
): RunModelError {
  return new RunModelError('causation_refused', verdict.detail, {
    reason: verdict.reason,
    subscriptionId: subId,
  });
}

/**
 * The RunSpec a firing submits: the template plus an origin naming the event (cause `schedule` for
 * `schedule.fired`, else `event`), the subscription, and the causing run when there is one.
 */
export function runSpecFor(
  sub: Subscription,
  event: PlatformEvent,
  causingRun?: Pick<Run, 'id'>,
): RunSpecInput {
  const scheduleId = event.kind === SCHEDULE_FIRED ? event.data.scheduleId : undefined;
  const origin: RunSpecInput['origin'] = {
    cause: typeof scheduleId === 'string' ? 'schedule' : 'event',
    eventId: event.id,
    eventKind: event.kind,
    subscriptionId: sub.id,
    ...(typeof scheduleId === 'string' && { scheduleId }),
    ...(causingRun && { causedByRunId: causingRun.id }),
  };
  const spec: RunSpecInput = { ...sub.runSpec, origin };
  if (spec.lifetime === 'session' && sub.sessionTtlMs !== undefined) {
    spec.expiresAt = new Date(toMillis(event.at) + sub.sessionTtlMs).toISOString();
  }
  return spec;
}
