// What the gate answers: admitted (with class and where the run waits) or refused (which rule, which
// status, and when a retry can succeed).
import type { RunClass } from '@everdict/run-model';
import { AdmissionError } from './errors.js';

export type RefusalRule =
  | 'agent_disabled'
  | 'causer_cancelled'
  | 'envelope'
  | 'queue_depth'
  | 'session_cap'
  | 'concurrency'
  | 'children'
  | 'depth';

/**
 * When a retry can succeed.
 * - `at`: a time. `basis` says how good it is: `expected_completion` / `session_expiry` are the earliest
 *   expected end of something holding a slot (callers' estimates; the slot may free earlier or later);
 *   `backoff` is the documented constant `GlobalPolicy.retryBackoffMs` when nothing better is known.
 * - `budget_raised`: only after the envelope is topped up or actuals are corrected (402).
 * - `never`: this request can never pass (fan-out guards count a run's whole life; depth is structural),
 *   or not until an operator acts (agent re-enabled).
 */
export type RetryHint =
  | {
      readonly when: 'at';
      readonly retryAt: number;
      readonly retryAfterMs: number;
      readonly basis: 'expected_completion' | 'session_expiry' | 'backoff';
    }
  | { readonly when: 'budget_raised' }
  | { readonly when: 'never' };

export interface Admitted {
  readonly outcome: 'admitted';
  readonly requestId: string;
  readonly runId: string;
  readonly tenant: string;
  readonly class: RunClass;
  /** `queue`: born queued, waits for dequeue. `session`: held open, running from admission (no dispatch). */
  readonly lane: 'queue' | 'session';
  /** The envelope this run draws from (its own slice if it was activated with one). */
  readonly envelopeId: string;
  /** 0 for a root run. */
  readonly depth: number;
  /** Where it waits: the tenant's queued runs ahead of it in its class, and the tenant's queue at admit. */
  readonly position: { readonly tenantAhead: number; readonly tenantQueued: number } | null;
  readonly admittedAt: number;
}

export interface Refused {
  readonly outcome: 'refused';
  readonly requestId: string;
  readonly tenant: string;
  readonly rule: RefusalRule;
  readonly status: 402 | 409 | 429;
  readonly retry: RetryHint;
  readonly detail: string;
}

export type AdmissionDecision = Admitted | Refused;

const STATUS: Readonly<Record<RefusalRule, Refused['status']>> = {
  agent_disabled: 409,
  causer_cancelled: 409,
  envelope: 402,
  queue_depth: 429,
  session_cap: 429,
  concurrency: 429,
  children: 429,
  depth: 429,
};

export function refusal(
  base: { requestId: string; tenant: string },
  rule: RefusalRule,
  retry: RetryHint,
  detail: string,
): Refused {
  return {
    outcome: 'refused',
    requestId: base.requestId,
    tenant: base.tenant,
    rule,
    status: STATUS[rule],
    retry,
    detail,
  };
}

export function retryAt(
  now: number,
  at: number,
  basis: 'expected_completion' | 'session_expiry' | 'backoff',
): RetryHint {
  const when = Math.max(at, now + 1);
  return { when: 'at', retryAt: when, retryAfterMs: when - now, basis };
}

/** For an HTTP layer that prefers throwing: the refusal as the package's one error type. */
export function refusalError(decision: Refused): AdmissionError {
  const code =
    decision.status === 402
      ? 'envelope_exhausted'
      : decision.rule === 'agent_disabled' || decision.rule === 'causer_cancelled'
        ? decision.rule
        : 'capacity_refused';
  return new AdmissionError(code, decision.detail, { rule: decision.rule, retry: decision.retry });
}
