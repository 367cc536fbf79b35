// Dispatch and settle around the store: dequeue honors WFQ, class priority + aging and per-tenant quotas
// (all inside the store's one atomic claim); release settles a run; cancelTree applies the cascade.
import { isTerminalStatus, RunStatus, type TerminalStatus } from '@everdict/run-model';
import { type CascadeOptOut, cascade } from './cascade.js';
import type { Actuals } from './envelope.js';
import { AdmissionError, invalidNow } from './errors.js';
import { type GlobalPolicyInput, globalPolicy, type TenantPolicyInput, tenantPolicy } from './policy.js';
import { type AdmissionStore, type Dispatch, hasSyncSteps, type SettleResult } from './store.js';

/** Parse and store a tenant's policy (creates or re-caps its root envelope). */
export async function configureTenant(
  store: AdmissionStore,
  tenant: string,
  policy: TenantPolicyInput = {},
): Promise<void> {
  await store.putTenant(tenant, tenantPolicy(policy));
}

export async function configureGlobal(store: AdmissionStore, policy: GlobalPolicyInput = {}): Promise<void> {
  await store.putGlobal(globalPolicy(policy));
}

/** Claim up to `capacity` queued runs to start now. */
export function dequeue(store: AdmissionStore, capacity: number, now: number): Promise<Dispatch[]> {
  if (!Number.isInteger(capacity) || capacity < 0) {
    return Promise.reject(
      new AdmissionError('bad_request', `capacity must be a non-negative integer, got ${capacity}`),
    );
  }
  const badNow = invalidNow(now);
  if (badNow) return Promise.reject(badNow);
  if (capacity === 0) return Promise.resolve([]);
  try {
    return Promise.resolve(hasSyncSteps(store) ? store.claimSync(capacity, now) : store.claim(capacity, now));
  } catch (error) {
    return Promise.reject(error); // a synchronous throw becomes a rejection, as in an async function
  }
}

export interface Release {
  readonly tenant: string;
  readonly runId: string;
  readonly status: TerminalStatus;
  /** Actual usd/tokens the run spent; charged to its envelope and every ancestor. */
  readonly actuals?: Partial<Actuals>;
}

/** Settle a run. Idempotent: a second release of the same run reports `already_settled`, charges nothing. */
export function release(store: AdmissionStore, r: Release, now: number): Promise<SettleResult> {
  const usd = r.actuals?.usd ?? 0;
  const tokens = r.actuals?.tokens ?? 0;
  if (!(usd >= 0 && tokens >= 0 && Number.isFinite(usd) && Number.isFinite(tokens))) {
    return Promise.reject(new AdmissionError('bad_request', 'actuals must be finite and non-negative'));
  }
  const badNow = invalidNow(now);
  if (badNow) return Promise.reject(badNow);
  // The type says terminal; an untyped caller's 'queued' or 'running' would move a run back into a live
  // status it is no longer queued or counted in.
  const status = RunStatus.safeParse(r.status);
  if (!status.success || !isTerminalStatus(status.data)) {
    return Promise.reject(
      new AdmissionError(
        'bad_request',
        `release status must be succeeded, failed or cancelled, got ${r.status}`,
      ),
    );
  }
  const settlement = { tenant: r.tenant, runId: r.runId, status: r.status, actuals: { usd, tokens }, now };
  try {
    return Promise.resolve(hasSyncSteps(store) ? store.settleSync(settlement) : store.settle(settlement));
  } catch (error) {
    return Promise.reject(error);
  }
}

export interface CascadeResult {
  /** Queued descendants, cancelled here (nothing ran, nothing charged). */
  readonly cancelled: string[];
  /** Running descendants: stop them, then `release(…, 'cancelled')` with their actuals. */
  readonly toStop: string[];
}

/** Cancel a run's tree: the cascade's queued runs are settled now; running ones are returned to stop. */
export async function cancelTree(
  store: AdmissionStore,
  tenant: string,
  runId: string,
  now: number,
  optOut: CascadeOptOut = {},
): Promise<CascadeResult> {
  const badNow = invalidNow(now);
  if (badNow) throw badNow;
  const nodes = await store.causalSubtree(tenant, runId);
  if (nodes.length === 0) throw new AdmissionError('unknown_run', `run ${runId} not found`);
  const status = new Map(nodes.map((n) => [n.runId, n.status]));
  const cancelled: string[] = [];
  const toStop: string[] = [];
  for (const id of cascade(nodes, runId, optOut)) {
    if (status.get(id) !== 'queued') {
      toStop.push(id);
      continue;
    }
    const r = await store.settle({
      tenant,
      runId: id,
      status: 'cancelled',
      actuals: { usd: 0, tokens: 0 },
      now,
      ifStatus: 'queued',
    });
    // Raced with a claim: it is running now, so it must be stopped instead.
    (r.settled ? cancelled : toStop).push(id);
  }
  return { cancelled, toStop };
}
