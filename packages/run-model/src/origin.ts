// Why a run exists: its cause, who stands behind it, and the causal edge to the run that caused it.
import { z } from 'zod';
import { Id } from './primitives.js';
import { RunCause } from './vocabulary.js';

/** An event kind: dotted lower-case words, e.g. `run.settled`, `schedule.fired`, `ci.push`. */
export const EventKind = z
  .string()
  .regex(/^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$/, 'an event kind is dotted, e.g. run.settled');
export type EventKind = z.infer<typeof EventKind>;

/**
 * origin = { cause, actor?, scheduleId?, eventId?, eventKind?, causedByRunId?, subscriptionId? }.
 * Each cause names the fact it stands on, so the causation rules are checkable from data:
 *   member → actor (the member);  schedule → scheduleId;  event → eventId + eventKind;
 *   run → causedByRunId (the causal edge);  ci, api → actor optional.
 * `subscriptionId` (an addition to the spec's list) names the subscription that turned an event into
 * this run; it is what the self-cause ban compares.
 */
export const Origin = z
  .strictObject({
    cause: RunCause,
    actor: Id.optional(),
    scheduleId: Id.optional(),
    eventId: Id.optional(),
    eventKind: EventKind.optional(),
    causedByRunId: Id.optional(),
    subscriptionId: Id.optional(),
  })
  .superRefine((origin, ctx) => {
    const need = (field: keyof typeof origin, why: string): void => {
      if (origin[field] === undefined) ctx.addIssue({ code: 'custom', path: [field], message: why });
    };
    if (origin.cause === 'member') need('actor', 'a member-caused run names its member');
    if (origin.cause === 'schedule') need('scheduleId', 'a schedule-caused run names its schedule');
    if (origin.cause === 'event') {
      need('eventId', 'an event-caused run names its event');
      need('eventKind', 'an event-caused run names its event kind');
    }
    if (origin.cause === 'run') need('causedByRunId', 'a run-caused run names its causing run');
  });
export type Origin = z.infer<typeof Origin>;
