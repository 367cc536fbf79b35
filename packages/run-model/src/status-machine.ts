// The run status machine: one transition table, pure transitions that return {run, patch, facts}.
import { z } from 'zod';
import { RunModelError, type RunModelIssue } from './errors.js';
import type { RunFact } from './facts.js';
import { RunError } from './outputs.js';
import { Timestamp, toMillis } from './primitives.js';
import type { Run } from './run.js';
import { isTerminalStatus, type RunStatus } from './vocabulary.js';

/** The one cause a running run goes back to queued for: the lease of its execution was lost. */
export const REQUEUE_CAUSE = 'executor_lost';

/** What can happen to a run. `fail` carries the error; `await_input` and `cancel` may say why. */
export const RunEvent = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('start') }),
  z.strictObject({ type: z.literal('await_input'), reason: z.string().optional() }),
  z.strictObject({ type: z.literal('resume_input') }),
  z.strictObject({ type: z.literal('succeed') }),
  z.strictObject({ type: z.literal('fail'), error: RunError }),
  z.strictObject({ type: z.literal('cancel'), reason: z.string().optional() }),
  /** Its executor was lost (its lease expired): the run waits again for its next attempt. */
  z.strictObject({ type: z.literal('requeue'), cause: z.literal(REQUEUE_CAUSE) }),
]);
export type RunEvent = z.infer<typeof RunEvent>;
export type RunEventType = RunEvent['type'];
export const RUN_EVENT_TYPES = [
  'start',
  'await_input',
  'resume_input',
  'succeed',
  'fail',
  'cancel',
  'requeue',
] as const satisfies readonly RunEventType[];

export interface TransitionRule {
  readonly from: RunStatus;
  readonly event: RunEventType;
  readonly to: RunStatus;
}

/**
 * Every legal transition, each listed once. Anything not here is refused: `already_terminal` from a
 * terminal status, `illegal_transition` otherwise.
 *   queued → running → (awaiting_input ⇄ running) → succeeded | failed | cancelled
 * A queued run may fail (it could not be placed) or be cancelled; a parked run may fail (its input
 * never came) or be cancelled; only a running run succeeds. A running run whose executor was lost
 * (`requeue`, cause `executor_lost` only) is queued again: its attempt ended without a result, and its
 * next start counts the next attempt.
 */
export const TRANSITIONS = [
  { from: 'queued', event: 'start', to: 'running' },
  { from: 'queued', event: 'fail', to: 'failed' },
  { from: 'queued', event: 'cancel', to: 'cancelled' },
  { from: 'running', event: 'await_input', to: 'awaiting_input' },
  { from: 'running', event: 'succeed', to: 'succeeded' },
  { from: 'running', event: 'fail', to: 'failed' },
  { from: 'running', event: 'cancel', to: 'cancelled' },
  { from: 'running', event: 'requeue', to: 'queued' },
  { from: 'awaiting_input', event: 'resume_input', to: 'running' },
  { from: 'awaiting_input', event: 'fail', to: 'failed' },
  { from: 'awaiting_input', event: 'cancel', to: 'cancelled' },
] as const satisfies readonly TransitionRule[];

/** The status an event leads to from a status, or undefined when the table has no such row. */
export function nextStatus(from: RunStatus, event: RunEventType): RunStatus | undefined {
  return TRANSITIONS.find((t) => t.from === from && t.event === event)?.to;
}

/** The events a run in this status accepts (empty for terminal statuses). */
export function legalEvents(from: RunStatus): RunEventType[] {
  return TRANSITIONS.filter((t) => t.from === from).map((t) => t.event);
}

export function isTerminal(run: RunStatus | Pick<Run, 'status'>): boolean {
  return isTerminalStatus(typeof run === 'string' ? run : run.status);
}

/** The fields a transition changes; apply it to the stored row in the same transaction as its facts. */
export interface RunPatch {
  status: RunStatus;
  updatedAt: string;
  startedAt?: string;
  settledAt?: string;
  error?: RunError;
  /** Set by `start`: the attempt it begins (the previous count + 1; the control plane's lease epoch). */
  attempt?: number;
}

export type TransitionResult =
  | { ok: true; run: Run; patch: RunPatch; facts: RunFact[] }
  | { ok: false; error: RunModelError };

function refuse(run: Run, event: RunEvent): { ok: false; error: RunModelError } {
  const details = { runId: run.id, status: run.status, event: event.type };
  if (isTerminalStatus(run.status)) {
    return {
      ok: false,
      error: new RunModelError('already_terminal', `run ${run.id} already ${run.status}`, details),
    };
  }
  const message = `run ${run.id} cannot ${event.type} while ${run.status}`;
  return { ok: false, error: new RunModelError('illegal_transition', message, details) };
}

function factFor(run: Run, event: RunEvent, now: string): RunFact {
  const base = { runId: run.id, tenant: run.tenant, kind: run.kind, at: now };
  switch (event.type) {
    case 'start':
      return { type: 'run.started', ...base, lifetime: run.lifetime };
    case 'await_input':
      return {
        type: 'run.awaiting_input',
        ...base,
        ...(event.reason !== undefined && { reason: event.reason }),
      };
    case 'resume_input':
      return { type: 'run.resumed', ...base };
    case 'fail':
      return { type: 'run.settled', ...base, outcome: 'failed', error: event.error };
    case 'cancel':
      return {
        type: 'run.settled',
        ...base,
        outcome: 'cancelled',
        ...(event.reason !== undefined && { reason: event.reason }),
      };
    case 'succeed':
      return { type: 'run.settled', ...base, outcome: 'succeeded' };
    case 'requeue':
      return { type: 'run.requeued', ...base, cause: event.cause, attempt: run.attempt ?? 0 };
  }
}

function invalid(
  run: Run,
  message: string,
  details: Record<string, unknown>,
  issues?: readonly RunModelIssue[],
): TransitionResult {
  return {
    ok: false,
    error: new RunModelError('invalid_input', message, { runId: run.id, ...details }, issues),
  };
}

/**
 * Apply one event to a run at `now`. Never mutates: returns a patched copy, the patch and the facts it
 * emits, or a typed refusal (`already_terminal`, `illegal_transition`; `invalid_input` when the event is
 * not a RunEvent — e.g. a `fail` whose error is malformed —, `now` is not an ISO timestamp with an offset,
 * or `now` precedes the run's last update). So a transition never yields a run `Run` would refuse.
 */
export function transition(run: Run, event: RunEvent, now: string): TransitionResult {
  const to = nextStatus(run.status, event.type);
  if (to === undefined) return refuse(run, event);
  const parsed = RunEvent.safeParse(event);
  if (!parsed.success) {
    return invalid(
      run,
      `invalid ${event.type} event for run ${run.id}`,
      { event: event.type },
      parsed.error.issues,
    );
  }
  if (!Timestamp.safeParse(now).success) {
    return invalid(run, `now ${String(now)} is not an ISO timestamp with an offset`, {
      now: String(now).slice(0, 100),
    });
  }
  if (!(toMillis(now) >= toMillis(run.updatedAt))) {
    const error = new RunModelError('invalid_input', `now ${now} precedes run ${run.id}'s last update`, {
      runId: run.id,
      updatedAt: run.updatedAt,
      now,
    });
    return { ok: false, error };
  }
  const patch: RunPatch = { status: to, updatedAt: now };
  if (event.type === 'start') {
    patch.startedAt = now;
    patch.attempt = (run.attempt ?? 0) + 1;
  }
  if (isTerminalStatus(to)) patch.settledAt = now;
  const ev = parsed.data;
  if (ev.type === 'fail') patch.error = ev.error;
  const next: Run = { ...run, ...patch };
  if (ev.type === 'requeue') delete next.startedAt;
  return { ok: true, run: next, patch, facts: [factFor(run, ev, now)] };
}

/** `transition`, throwing the RunModelError on refusal. */
export function applyTransition(
  run: Run,
  event: RunEvent,
  now: string,
): Extract<TransitionResult, { ok: true }> {
  const result = transition(run, event, now);
  if (!result.ok) throw result.error;
  return result;
}
