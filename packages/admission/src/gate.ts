// The one gate, in this order for every kind: agent switch → causal tree alive (409) → causal envelope
// (402) → tenant queue depth / session pool and in-flight caps (429) → fan-out guards: children, depth (429)
// → class assignment.
// `decide` is pure; `admit` reads a snapshot, decides, and commits with the same caps as guards.
import { cascadeOptOut, revokedBy } from './cascade.js';
import { assignClass } from './class.js';
import {
  type AdmissionDecision,
  type Admitted,
  type Refused,
  type RetryHint,
  refusal,
  retryAt,
} from './decision.js';
import { type Actuals, delegate, type Envelope, exhaustion, inFlightBlock } from './envelope.js';
import { AdmissionError, invalidNow } from './errors.js';
import type { GlobalPolicy } from './policy.js';
import { type AdmissionRequest, type AdmissionRequestInput, parseAdmissionRequest } from './request.js';
import { isMemberSession, sessionBlock } from './session-pool.js';
import {
  type AdmissionKey,
  type AdmissionPlan,
  type AdmissionSnapshot,
  type AdmissionStore,
  type CommitResult,
  hasSyncSteps,
  type SyncAdmissionSteps,
} from './store.js';
import { admitted } from './verdict.js';

export type Verdict =
  | { readonly decision: Refused }
  | { readonly decision: Admitted; readonly plan: AdmissionPlan };

const MAX_ATTEMPTS = 8;
const NO_ESTIMATE: Actuals = { usd: 0, tokens: 0 };

/** Best retry time for a 429 held by running work: the earliest expected end, else the constant backoff. */
function slotHint(now: number, earliest: number | null, global: GlobalPolicy, session = false): RetryHint {
  if (earliest !== null) return retryAt(now, earliest, session ? 'session_expiry' : 'expected_completion');
  return retryAt(now, now + global.retryBackoffMs, 'backoff');
}

function refuse(
  request: AdmissionRequest,
  rule: Refused['rule'],
  retry: RetryHint,
  detail: string,
): { decision: Refused } {
  return { decision: refusal(request, rule, retry, detail) };
}

/** Decide one request against one snapshot. Pure: no I/O, `now` is a parameter. */
export function decide(
  snap: AdmissionSnapshot,
  request: AdmissionRequest,
  now: number,
): Verdict | { prior: Admitted } {
  if (snap.prior) return { prior: snap.prior };
  const { policy, causer, global, load } = snap;
  if (!policy || snap.path.length === 0) {
    throw new AdmissionError('unknown_tenant', `tenant ${request.tenant} is not configured`);
  }
  if (request.causedByRunId !== undefined && !causer) {
    throw new AdmissionError('unknown_run', `causer ${request.causedByRunId} not found`);
  }
  if (request.envelope && snap.sliceTaken) {
    throw new AdmissionError('envelope_exists', `envelope ${request.envelope.id} already exists`);
  }
  if (snap.agentDisabled)
    return refuse(request, 'agent_disabled', { when: 'never' }, `agent ${request.agentId} is disabled`);
  // 0b. the causal tree is alive (409): a cancelled causer, or one a cancelled ancestor's cascade reaches,
  // causes nothing more — the cascade's reach (`revokedBy`), with the tenant's opt-out.
  const revoker = causer ? revokedBy(causer, snap.ancestors, request, cascadeOptOut(policy.cascade)) : null;
  if (causer && revoker !== null) {
    const who =
      revoker === causer.runId ? `causer ${revoker}` : `${revoker}, an ancestor of causer ${causer.runId},`;
    return refuse(
      request,
      'causer_cancelled',
      { when: 'never' },
      `run ${who} is cancelled: its tree causes no more runs`,
    );
  }

  // 1. causal envelope (402): the drawn envelope — or the new slice of it — and every ancestor.
  const slice: Envelope | null = request.envelope ? delegate(snap.path[0]!, request.envelope) : null;
  const path = slice ? [slice, ...snap.path] : snap.path;
  const estimate = request.estimate ?? NO_ESTIMATE;
  const spent = exhaustion(path, estimate);
  if (spent) {
    return refuse(
      request,
      'envelope',
      { when: 'budget_raised' },
      `envelope ${spent.envelopeId} has no ${spent.resource} left`,
    );
  }

  // 2. tenant caps (429): queue depth for tasks, the session pool for held-open runs; then in-flight caps.
  const session = request.lifetime === 'session';
  const member = session && isMemberSession(request);
  const pools = session
    ? {
        tenant: { maxSessions: policy.session.maxSessions, memberReserve: policy.session.memberReserve },
        global: { maxSessions: global.maxSessions, memberReserve: global.memberReserve },
      }
    : null;
  if (!session && load.queued >= policy.maxQueued) {
    return refuse(
      request,
      'queue_depth',
      slotHint(now, load.earliestRunningEnd, global),
      `${load.queued} queued (cap ${policy.maxQueued})`,
    );
  }
  if (pools) {
    const full = sessionBlock(
      { load: load.sessions, caps: pools.tenant },
      { load: snap.globalSessions, caps: pools.global },
      member,
    );
    if (full === 'tenant') {
      return refuse(
        request,
        'session_cap',
        slotHint(now, load.earliestSessionEnd, global, true),
        'tenant session pool full',
      );
    }
    if (full === 'global')
      return refuse(request, 'session_cap', slotHint(now, null, global), 'global session pool full');
  }
  const crowded = inFlightBlock(path);
  if (crowded) {
    const earliest = session ? load.earliestSessionEnd : load.earliestRunningEnd;
    return refuse(
      request,
      'concurrency',
      slotHint(now, earliest, global, session),
      `envelope ${crowded.id} at in-flight cap ${crowded.inFlightCap}`,
    );
  }

  // 3. fan-out guards (429, never retryable: they count a run's whole life and the tree's shape).
  if (causer && causer.children >= policy.maxChildrenPerRun) {
    return refuse(
      request,
      'children',
      { when: 'never' },
      `run ${causer.runId} already caused ${causer.children} runs`,
    );
  }
  const depth = causer ? causer.depth + 1 : 0;
  const maxDepth = Math.min(policy.maxCausalDepth, request.maxCausalDepth ?? policy.maxCausalDepth);
  if (depth > maxDepth) {
    return refuse(request, 'depth', { when: 'never' }, `causal depth ${depth} exceeds ${maxDepth}`);
  }

  // 4. class assignment.
  const runClass = assignClass(request);
  return admitted(snap, request, now, { runClass, depth, slice, member, pools, estimate });
}

/**
 * Admit one request. Idempotent by (tenant, requestId): a repeat returns the first admission and charges
 * nothing. Refusals are not recorded — a retry after the hint is decided afresh. The input is parsed
 * (zod) first: this is the public boundary.
 */
export function admit(
  store: AdmissionStore,
  input: AdmissionRequestInput,
  now: number,
): Promise<AdmissionDecision> {
  let request: AdmissionRequest;
  try {
    request = parseAdmissionRequest(input);
  } catch (error) {
    return Promise.reject(error);
  }
  return admitTrusted(store, request, now);
}

/**
 * `admit` for a request that is already an `AdmissionRequest` — parsed by `parseAdmissionRequest`, or
 * built by trusted code to that type (defaults applied: `lifetime` set). It is NOT validated again (ids'
 * lengths, positive numbers): keep untrusted input on `admit`. Same gate, same decisions otherwise. On a
 * store with `SyncAdmissionSteps` (the memory store) the whole read–decide–commit runs in one go.
 */
export function admitTrusted(
  store: AdmissionStore,
  request: AdmissionRequest,
  now: number,
): Promise<AdmissionDecision> {
  const badNow = invalidNow(now);
  if (badNow) return Promise.reject(badNow);
  if (!hasSyncSteps(store)) return admitAsync(store, request, now);
  try {
    return Promise.resolve(admitSync(store, request, now));
  } catch (error) {
    return Promise.reject(error);
  }
}

function keyOf(request: AdmissionRequest): AdmissionKey {
  return {
    tenant: request.tenant,
    requestId: request.requestId,
    causedByRunId: request.causedByRunId,
    agentId: request.agentId,
    sliceId: request.envelope?.id,
  };
}

/** The decision a commit result settles, null to decide again ('raced'); throws the 409s. */
function committed(result: CommitResult, request: AdmissionRequest): AdmissionDecision | null {
  if (result.status === 'committed' || result.status === 'duplicate') return result.decision;
  if (result.status === 'run_exists') {
    throw new AdmissionError('run_exists', `run ${request.runId} was already admitted by another request`);
  }
  if (result.status === 'slice_exists') {
    throw new AdmissionError('envelope_exists', `envelope ${request.envelope?.id} already exists`);
  }
  return null;
}

function contended(request: AdmissionRequest): AdmissionError {
  return new AdmissionError('contended', `admission of ${request.requestId} kept racing; retry`);
}

function admitSync(store: SyncAdmissionSteps, request: AdmissionRequest, now: number): AdmissionDecision {
  const key = request.envelope ? keyOf(request) : request; // without a slice the request is its own key
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const verdict = decide(store.loadAdmissionSync(key), request, now);
    if ('prior' in verdict) return verdict.prior;
    if (!('plan' in verdict)) return verdict.decision;
    const done = committed(store.commitAdmissionSync(verdict.plan), request);
    if (done) return done;
  }
  throw contended(request);
}

async function admitAsync(
  store: AdmissionStore,
  request: AdmissionRequest,
  now: number,
): Promise<AdmissionDecision> {
  const key = keyOf(request);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const verdict = decide(await store.loadAdmission(key), request, now);
    if ('prior' in verdict) return verdict.prior;
    if (!('plan' in verdict)) return verdict.decision;
    const done = committed(await store.commitAdmission(verdict.plan), request);
    if (done) return done;
  }
  throw contended(request);
}
