// The facts a run's transitions emit: typed, flat, ready for the outbox and for subscription filters.
import { z } from 'zod';
import { EventKind } from './origin.js';
import { RunError } from './outputs.js';
import { Id, JsonObject, type JsonValue, Timestamp } from './primitives.js';
import { RunCause, RunClass, RunKind, RunLifetime, TERMINAL_STATUSES } from './vocabulary.js';

const factBase = { runId: Id, tenant: Id, kind: RunKind, at: Timestamp };

export const RunQueued = z.strictObject({
  type: z.literal('run.queued'),
  ...factBase,
  cause: RunCause,
  class: RunClass,
  lifetime: RunLifetime,
  causedByRunId: Id.optional(),
});
export type RunQueued = z.infer<typeof RunQueued>;

export const RunStarted = z.strictObject({
  type: z.literal('run.started'),
  ...factBase,
  lifetime: RunLifetime,
});
export type RunStarted = z.infer<typeof RunStarted>;

export const RunAwaitingInput = z.strictObject({
  type: z.literal('run.awaiting_input'),
  ...factBase,
  reason: z.string().optional(),
});
export type RunAwaitingInput = z.infer<typeof RunAwaitingInput>;

export const RunResumed = z.strictObject({ type: z.literal('run.resumed'), ...factBase });
export type RunResumed = z.infer<typeof RunResumed>;

export const RunSettled = z.strictObject({
  type: z.literal('run.settled'),
  ...factBase,
  outcome: z.enum(TERMINAL_STATUSES),
  error: RunError.optional(),
  reason: z.string().optional(),
});
export type RunSettled = z.infer<typeof RunSettled>;

export const RunRequeued = z.strictObject({
  type: z.literal('run.requeued'),
  ...factBase,
  cause: z.literal('executor_lost'),
  /** The attempt that was lost. */
  attempt: z.number().int().min(0),
});
export type RunRequeued = z.infer<typeof RunRequeued>;

export const RunFact = z.discriminatedUnion('type', [
  RunQueued,
  RunStarted,
  RunAwaitingInput,
  RunResumed,
  RunSettled,
  RunRequeued,
]);
export type RunFact = z.infer<typeof RunFact>;
export type RunFactType = RunFact['type'];
export const RUN_FACT_TYPES = [
  'run.queued',
  'run.started',
  'run.awaiting_input',
  'run.resumed',
  'run.settled',
  'run.requeued',
] as const satisfies readonly RunFactType[];

/** The time event a schedule emits (cron lives in the control plane; the fact's shape lives here). */
export const SCHEDULE_FIRED = 'schedule.fired';
export const ScheduleFiredData = z.strictObject({
  scheduleId: Id,
  firedAt: Timestamp,
  cron: z.string().optional(),
});
export type ScheduleFiredData = z.infer<typeof ScheduleFiredData>;

/** A platform event as subscriptions see it: a kind, the tenant, when, and a flat-ish data object. */
export const PlatformEvent = z.strictObject({
  id: Id,
  tenant: Id,
  kind: EventKind,
  at: Timestamp,
  /** The run this event is about, when it is about one (every run.* fact). */
  runId: Id.optional(),
  data: JsonObject,
});
export type PlatformEvent = z.infer<typeof PlatformEvent>;

/** A run fact as a platform event: the fact's fields become `data` (minus type/tenant/at). */
export function eventFromFact(fact: RunFact, eventId: string): PlatformEvent {
  const { type, tenant, at, ...rest } = fact;
  const data: Record<string, JsonValue> = {};
  for (const [k, v] of Object.entries(rest)) if (v !== undefined) data[k] = v as JsonValue;
  return { id: eventId, tenant, kind: type, at, runId: fact.runId, data };
}

/** The `schedule.fired` event for one firing. */
export function scheduleFiredEvent(input: {
  eventId: string;
  tenant: string;
  scheduleId: string;
  firedAt: string;
  cron?: string;
}): PlatformEvent {
  const data: ScheduleFiredData = { scheduleId: input.scheduleId, firedAt: input.firedAt };
  if (input.cron !== undefined) data.cron = input.cron;
  return { id: input.eventId, tenant: input.tenant, kind: SCHEDULE_FIRED, at: input.firedAt, data };
}
