import { describe, expect, it } from 'vitest';
import { task } from './contract.js';
import { cancelTree, configureGlobal, configureTenant, dequeue, release } from './dispatch.js';
import { rootEnvelope } from './envelope.js';
import { AdmissionError } from './errors.js';
import { admit, decide } from './gate.js';
import { MemoryAdmissionStore } from './memory/index.js';
import { globalPolicy, type TenantPolicyInput, tenantPolicy } from './policy.js';
import { parseAdmissionRequest } from './request.js';
import type { AdmissionSnapshot, RunSlot } from './store.js';
import { MAX_WEIGHT, MIN_WEIGHT } from './wfq.js';

const NOW = 5_000_000;

const causer: RunSlot = {
  runId: 'agent-1',
  tenant: 't',
  kind: 'agent',
  cause: 'event',
  class: 'background',
  lifetime: 'task',
  status: 'running',
  causedByRunId: null,
  depth: 2,
  children: 3,
  envelopeId: 'root:t',
  member: false,
  agentId: 'bot',
  expectedDurationMs: null,
  admittedAt: 0,
  startedAt: 0,
};

/** A snapshot in which every rule is violated; `fix` lifts them one at a time. */
function snapshot(fix: number, policy: TenantPolicyInput = {}): AdmissionSnapshot {
  const p = tenantPolicy({ maxQueued: 5, maxChildrenPerRun: 3, maxCausalDepth: 2, ...policy });
  const root = rootEnvelope('t', { usd: 10 }, 4);
  return {
    prior: null,
    policy: p,
    global: globalPolicy(),
    causer: fix >= 5 ? { ...causer, children: 0, depth: fix >= 6 ? 0 : 2 } : causer,
    ancestors: [],
    path: [{ ...root, spent: { usd: fix >= 2 ? 1 : 10, tokens: 0, runs: 0 }, inFlight: fix >= 4 ? 0 : 4 }],
    sliceTaken: false,
    agentDisabled: fix < 1,
    load: {
      queued: fix >= 3 ? 0 : 5,
      queuedByClass: { interactive: 0, background: fix >= 3 ? 0 : 5, batch: 0 },
      running: 0,
      sessions: { total: 0, member: 0 },
      earliestRunningEnd: NOW + 700,
      earliestSessionEnd: null,
    },
    globalSessions: { total: 0, member: 0 },
  };
}

const request = parseAdmissionRequest(
  task('t', 'r1', { kind: 'agent', cause: 'run', causedByRunId: 'agent-1', agentId: 'bot' }),
);

describe('the gate order', () => {
  it('refuses by the first violated rule: agent, envelope, queue depth, concurrency, children, depth', () => {
    const rules = [0, 1, 2, 3, 4, 5, 6].map((fix) => {
      const v = decide(snapshot(fix), request, NOW);
      return 'prior' in v ? 'prior' : v.decision.outcome === 'refused' ? v.decision.rule : 'admitted';
    });
    expect(rules).toEqual([
      'agent_disabled',
      'envelope',
      'queue_depth',
      'concurrency',
      'children',
      'depth',
      'admitted',
    ]);
  });

  it('gives each refusal its status and retry hint', () => {
    const refusal = (fix: number) => {
      const v = decide(snapshot(fix), request, NOW);
      if ('prior' in v || v.decision.outcome !== 'refused') throw new Error('expected a refusal');
      return v.decision;
    };
    expect(refusal(1)).toMatchObject({ status: 402, retry: { when: 'budget_raised' } });
    expect(refusal(2)).toMatchObject({
      status: 429,
      retry: { when: 'at', retryAt: NOW + 700, retryAfterMs: 700, basis: 'expected_completion' },
    });
    expect(refusal(4)).toMatchObject({ status: 429, retry: { when: 'never' } });
    expect(refusal(5)).toMatchObject({ rule: 'depth', status: 429, retry: { when: 'never' } });
    const noEstimate = { ...snapshot(2), load: { ...snapshot(2).load, earliestRunningEnd: null } };
    const v = decide(noEstimate, request, NOW);
    expect('decision' in v && v.decision).toMatchObject({
      retry: { when: 'at', retryAfterMs: 1_000, basis: 'backoff' },
    });
  });

  it('refuses depth at the tighter of the tenant bound and the bound of the cause (a subscription maxDepth)', () => {
    // Causer at depth 0 (snapshot 6): the new run has depth 1, within the tenant's bound of 2.
    const at = (maxCausalDepth: number) => {
      const v = decide(snapshot(6), parseAdmissionRequest({ ...request, maxCausalDepth }), NOW);
      return 'prior' in v ? 'prior' : v.decision.outcome === 'refused' ? v.decision.rule : 'admitted';
    };
    expect([at(0), at(1), at(5)]).toEqual(['depth', 'admitted', 'admitted']);
  });

  it('checks the session pool instead of the queue for held-open runs', () => {
    const session = parseAdmissionRequest(
      task('t', 's1', { kind: 'sandbox', lifetime: 'session', cause: 'event' }),
    );
    const snap = {
      ...snapshot(6),
      causer: null,
      load: { ...snapshot(2).load, sessions: { total: 6, member: 0 } },
    };
    const v = decide(snap, session, NOW);
    expect('decision' in v && v.decision).toMatchObject({
      outcome: 'refused',
      rule: 'session_cap',
      status: 429,
    });
  });
});

describe('admit against a store', () => {
  async function setup(policy: TenantPolicyInput = {}) {
    const store = new MemoryAdmissionStore();
    await configureGlobal(store, {});
    await configureTenant(store, 't', policy);
    return store;
  }

  it('is idempotent by request id: same decision, charged once; a second request for the run is a 409', async () => {
    const store = await setup({ budget: { runs: 10 } });
    const a = await admit(store, task('t', 'r1'), NOW);
    expect(await admit(store, task('t', 'r1'), NOW + 10)).toEqual(a); // rebuilt, not the same object
    expect((await store.getEnvelope('t', 'root:t'))?.spent.runs).toBe(1);
    await expect(admit(store, task('t', 'r1', { requestId: 'other' }), NOW)).rejects.toMatchObject({
      code: 'run_exists',
      httpStatus: 409,
    });
  });

  it('does not record refusals: a retry with the same request id is decided afresh', async () => {
    const store = await setup({ maxQueued: 1 });
    await admit(store, task('t', 'r1'), NOW);
    expect(await admit(store, task('t', 'r2'), NOW)).toMatchObject({
      outcome: 'refused',
      rule: 'queue_depth',
    });
    await dequeue(store, 1, NOW);
    expect(await admit(store, task('t', 'r2'), NOW)).toMatchObject({ outcome: 'admitted' });
  });

  it('raises typed errors for unknown tenants, unknown causers, bad input and taken slices', async () => {
    const store = await setup();
    await expect(admit(store, task('nope', 'r'), NOW)).rejects.toMatchObject({
      code: 'unknown_tenant',
      httpStatus: 404,
    });
    await expect(admit(store, task('t', 'r', { causedByRunId: 'ghost' }), NOW)).rejects.toMatchObject({
      code: 'unknown_run',
    });
    await expect(admit(store, { ...task('t', 'r'), kind: 'Bad Kind' }, NOW)).rejects.toBeInstanceOf(
      AdmissionError,
    );
    await admit(store, task('t', 'a1', { envelope: { id: 's' } }), NOW);
    await expect(admit(store, task('t', 'a2', { envelope: { id: 's' } }), NOW)).rejects.toMatchObject({
      code: 'envelope_exists',
      httpStatus: 409,
    });
  });

  it('assigns classes: members interactive, caused and event runs background, schedules batch', async () => {
    const store = await setup();
    const cls = async (runId: string, extra: Parameters<typeof task>[2]) => {
      const d = await admit(store, task('t', runId, extra), NOW);
      return d.outcome === 'admitted' ? d.class : d.rule;
    };
    expect(await cls('m', { cause: 'member' })).toBe('interactive');
    expect(await cls('e', { cause: 'event', kind: 'agent' })).toBe('background');
    expect(await cls('c', { cause: 'run', causedByRunId: 'e' })).toBe('background');
    expect(await cls('c2', { cause: 'member', causedByRunId: 'e', class: 'interactive' })).toBe('background');
    expect(await cls('s', { cause: 'schedule' })).toBe('batch');
    expect(await cls('b', { cause: 'member', class: 'batch' })).toBe('batch');
  });

  it('walks the envelope tree: a child cannot exceed its parent; charges reach the root', async () => {
    const store = await setup({ budget: { usd: 100 } });
    await admit(
      store,
      task('t', 'agent', { kind: 'agent', envelope: { id: 'parent', caps: { usd: 5 } } }),
      NOW,
    );
    await admit(
      store,
      task('t', 'sub', {
        cause: 'run',
        causedByRunId: 'agent',
        envelope: { id: 'child', caps: { usd: 50 } },
      }),
      NOW,
    );
    await admit(store, task('t', 'w1', { cause: 'run', causedByRunId: 'sub' }), NOW);
    await dequeue(store, 3, NOW);
    await release(store, { tenant: 't', runId: 'w1', status: 'succeeded', actuals: { usd: 6 } }, NOW + 1);
    expect((await store.getEnvelope('t', 'child'))?.spent.usd).toBe(6);
    expect((await store.getEnvelope('t', 'parent'))?.spent.usd).toBe(6);
    expect((await store.getEnvelope('t', 'root:t'))?.spent.usd).toBe(6);
    const refused = await admit(store, task('t', 'w2', { cause: 'run', causedByRunId: 'sub' }), NOW + 2);
    expect(refused).toMatchObject({ outcome: 'refused', rule: 'envelope', status: 402 });
    expect(refused.outcome === 'refused' && refused.detail).toContain('parent');
  });

  it('requires the estimate to fit the remaining balance', async () => {
    const store = await setup({ budget: { usd: 10 } });
    expect(await admit(store, task('t', 'big', { estimate: { usd: 11 } }), NOW)).toMatchObject({
      rule: 'envelope',
    });
    expect(await admit(store, task('t', 'ok', { estimate: { usd: 9 } }), NOW)).toMatchObject({
      outcome: 'admitted',
    });
  });

  it('reports the queue position at admission', async () => {
    const store = await setup();
    await admit(store, task('t', 'i1', { cause: 'member' }), NOW);
    await admit(store, task('t', 'b1', { cause: 'schedule' }), NOW);
    const d = await admit(store, task('t', 'g1', { cause: 'event' }), NOW);
    expect(d).toMatchObject({ lane: 'queue', position: { tenantAhead: 1, tenantQueued: 2 } });
  });
});

describe('boundary values: weights and clocks', () => {
  it('refuses a tenant weight outside [MIN_WEIGHT, MAX_WEIGHT] with a 400 and keeps the tenant unknown', async () => {
    const store = new MemoryAdmissionStore();
    for (const weight of [0, 5e-324, 1e-300, MIN_WEIGHT / 2, MAX_WEIGHT * 2]) {
      const error = await configureTenant(store, 't', { weight }).catch((e: unknown) => e);
      expect(error, String(weight)).toBeInstanceOf(AdmissionError);
      expect(error).toMatchObject({ code: 'bad_request', httpStatus: 400 });
    }
    // The store's own step refuses it too, before any write (a store fed an unparsed policy).
    await expect(store.putTenant('t', { ...tenantPolicy(), weight: 1e-300 })).rejects.toThrow(RangeError);
    await expect(admit(store, task('t', 'r'), NOW)).rejects.toMatchObject({ code: 'unknown_tenant' });
    await configureTenant(store, 't', { weight: MIN_WEIGHT });
    await configureTenant(store, 'u', { weight: MAX_WEIGHT });
  });

  it('refuses a non-finite now at every step, and a release to a live status, with a 400, changing nothing', async () => {
    const store = new MemoryAdmissionStore();
    await configureTenant(store, 't');
    await admit(store, task('t', 'q'), NOW);
    await admit(store, task('t', 'r'), NOW);
    await dequeue(store, 1, NOW);
    for (const bad of [Number.NaN, Infinity, -Infinity]) {
      await expect(admit(store, task('t', 'x'), bad)).rejects.toMatchObject({ code: 'bad_request' });
      await expect(dequeue(store, 1, bad)).rejects.toMatchObject({ code: 'bad_request' });
      await expect(
        release(store, { tenant: 't', runId: 'q', status: 'succeeded' }, bad),
      ).rejects.toMatchObject({
        code: 'bad_request',
      });
      await expect(cancelTree(store, 't', 'q', bad)).rejects.toMatchObject({ code: 'bad_request' });
    }
    for (const status of ['queued', 'running', 'awaiting_input', 'done', undefined]) {
      const r = { tenant: 't', runId: 'q', status } as unknown as Parameters<typeof release>[1];
      await expect(release(store, r, NOW), String(status)).rejects.toMatchObject({ code: 'bad_request' });
    }
    expect(await store.getRun('t', 'x')).toBeNull();
    expect((await store.getRun('t', 'q'))?.status).toBe('running');
    expect((await store.getRun('t', 'r'))?.status).toBe('queued');
    // Still in order: the queued run was not promoted as "aged" by a NaN clock.
    expect((await dequeue(store, 1, NOW + 1)).map((d) => [d.runId, d.waitedMs])).toEqual([['r', 1]]);
  });
});
