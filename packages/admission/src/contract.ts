// The store contract: behaviour every AdmissionStore must show, written once and run against each
// implementation (the memory store here; the PostgreSQL store in apps/control-plane).
//   import { describeAdmissionStoreContract } from '@everdict/admission/contract';
//   describeAdmissionStoreContract('postgres', async () => makePgStore());
import { beforeEach, describe, expect, it } from 'vitest';
import { cancelTree, configureGlobal, configureTenant, dequeue, release } from './dispatch.js';
import { admit, decide } from './gate.js';
import type { TenantPolicyInput } from './policy.js';
import { type AdmissionRequestInput, parseAdmissionRequest } from './request.js';
import type { AdmissionPlan, AdmissionSnapshot, AdmissionStore } from './store.js';

export type StoreFactory = () => AdmissionStore | Promise<AdmissionStore>;

const T0 = 1_000_000;
const AGING = 10_000;

export function task(
  tenant: string,
  runId: string,
  extra: Partial<AdmissionRequestInput> = {},
): AdmissionRequestInput {
  return { requestId: `req-${runId}`, runId, tenant, kind: 'eval', cause: 'api', ...extra };
}

export function describeAdmissionStoreContract(name: string, makeStore: StoreFactory): void {
  describe(`AdmissionStore contract: ${name}`, () => {
    let store: AdmissionStore;
    const tenant = async (id: string, policy: TenantPolicyInput = {}) => configureTenant(store, id, policy);

    beforeEach(async () => {
      store = await makeStore();
      await configureGlobal(store, { agingMs: AGING, maxSessions: 3, memberReserve: 1 });
    });

    it('knows configured tenants only, scoped by tenant', async () => {
      await tenant('a');
      expect((await store.loadAdmission({ tenant: 'a', requestId: 'r' })).policy).not.toBeNull();
      expect((await store.loadAdmission({ tenant: 'zz', requestId: 'r' })).policy).toBeNull();
      await admit(store, task('a', 'run-1'), T0);
      expect(await store.getRun('a', 'run-1')).toMatchObject({ status: 'queued', depth: 0 });
      expect(await store.getRun('b', 'run-1')).toBeNull();
    });

    it('records one admission per request id and never charges twice', async () => {
      await tenant('a');
      const first = await admit(store, task('a', 'run-1'), T0);
      const again = await admit(store, task('a', 'run-1'), T0 + 5);
      expect(again).toEqual(first);
      const root = await store.getEnvelope('a', 'root:a');
      expect(root).toMatchObject({ inFlight: 1, spent: { runs: 1 } });
      expect(
        await store.commitAdmission(
          planFor(await store.loadAdmission({ tenant: 'a', requestId: 'x' }), 'x', 'run-1'),
        ),
      ).toEqual({ status: 'run_exists' });
    });

    it('re-checks guards at commit: a stale plan races instead of overfilling', async () => {
      await tenant('a', { maxQueued: 1 });
      const stale = planFor(await store.loadAdmission({ tenant: 'a', requestId: 'r2' }), 'r2', 'run-2');
      await admit(store, task('a', 'run-1'), T0);
      expect(await store.commitAdmission(stale)).toEqual({ status: 'raced' });
      expect(await admit(store, task('a', 'run-2'), T0)).toMatchObject({
        outcome: 'refused',
        rule: 'queue_depth',
      });
    });

    it('propagates a slice child charge to the root and releases in-flight on settle', async () => {
      await tenant('a', { budget: { usd: 100 } });
      await admit(
        store,
        task('a', 'agent-1', { kind: 'agent', envelope: { id: 'slice-1', caps: { usd: 10 } } }),
        T0,
      );
      await admit(store, task('a', 'child-1', { cause: 'run', causedByRunId: 'agent-1' }), T0);
      expect(await store.getRun('a', 'child-1')).toMatchObject({ envelopeId: 'slice-1', depth: 1 });
      expect(await store.getRun('a', 'agent-1')).toMatchObject({ children: 1 });
      await dequeue(store, 2, T0 + 1);
      await release(
        store,
        { tenant: 'a', runId: 'child-1', status: 'succeeded', actuals: { usd: 3, tokens: 7 } },
        T0 + 2,
      );
      expect(await store.getEnvelope('a', 'slice-1')).toMatchObject({
        inFlight: 1,
        spent: { usd: 3, tokens: 7, runs: 2 },
      });
      expect(await store.getEnvelope('a', 'root:a')).toMatchObject({
        inFlight: 1,
        spent: { usd: 3, tokens: 7, runs: 2 },
      });
      const twice = await release(
        store,
        { tenant: 'a', runId: 'child-1', status: 'failed', actuals: { usd: 9 } },
        T0 + 3,
      );
      expect(twice).toEqual({ settled: false, reason: 'already_settled' });
      expect((await store.getEnvelope('a', 'root:a'))?.spent.usd).toBe(3);
    });

    it('claims interactive before background before batch, aged items first, oldest first', async () => {
      await tenant('a');
      await admit(store, task('a', 'b1', { class: 'batch' }), T0);
      await admit(store, task('a', 'g1', { class: 'background' }), T0 + 1);
      await admit(store, task('a', 'i1', { class: 'interactive' }), T0 + 2);
      expect((await dequeue(store, 3, T0 + 3)).map((d) => d.runId)).toEqual(['i1', 'g1', 'b1']);
      await admit(store, task('a', 'b2', { class: 'batch' }), T0 + 10);
      await admit(store, task('a', 'i2', { class: 'interactive' }), T0 + 10 + AGING);
      const [first] = await dequeue(store, 1, T0 + 10 + AGING);
      expect(first).toMatchObject({ runId: 'b2', waitedMs: AGING });
    });

    it('skips a tenant at its concurrency quota without blocking others, and resumes it on release', async () => {
      await tenant('a', { maxConcurrent: 1 });
      await tenant('b');
      for (const id of ['a1', 'a2']) await admit(store, task('a', id), T0);
      await admit(store, task('b', 'b1'), T0 + 1);
      expect((await dequeue(store, 3, T0 + 2)).map((d) => d.runId).sort()).toEqual(['a1', 'b1']);
      expect(await dequeue(store, 1, T0 + 3)).toEqual([]);
      await release(store, { tenant: 'a', runId: 'a1', status: 'succeeded' }, T0 + 4);
      expect((await dequeue(store, 1, T0 + 5)).map((d) => d.runId)).toEqual(['a2']);
    });

    it('shares dispatches between backlogged tenants by weight', async () => {
      await tenant('heavy', { weight: 3 });
      await tenant('light', { weight: 1 });
      for (let i = 0; i < 40; i++) {
        await admit(store, task('heavy', `h${i}`, { class: 'batch' }), T0);
        await admit(store, task('light', `l${i}`, { class: 'batch' }), T0);
      }
      const got = await dequeue(store, 20, T0 + 1);
      expect(got.filter((d) => d.tenant === 'heavy').length).toBe(15);
    });

    it('cancels a queued run only if it is still queued; a queued run cannot succeed', async () => {
      await tenant('a');
      await admit(store, task('a', 'q'), T0);
      expect(await release(store, { tenant: 'a', runId: 'q', status: 'succeeded' }, T0)).toEqual({
        settled: false,
        reason: 'not_started',
      });
      await dequeue(store, 1, T0 + 1);
      const r = await store.settle({
        tenant: 'a',
        runId: 'q',
        status: 'cancelled',
        actuals: { usd: 0, tokens: 0 },
        now: T0,
        ifStatus: 'queued',
      });
      expect(r).toEqual({ settled: false, reason: 'status_changed' });
    });

    it('returns the causal subtree and cascades over it', async () => {
      await tenant('a');
      await admit(store, task('a', 'root', { kind: 'agent' }), T0);
      await admit(store, task('a', 'c1', { cause: 'run', causedByRunId: 'root' }), T0);
      await admit(store, task('a', 'c2', { cause: 'run', causedByRunId: 'c1' }), T0);
      await admit(store, task('a', 'other'), T0);
      const nodes = await store.causalSubtree('a', 'root');
      expect(nodes.map((n) => n.runId).sort()).toEqual(['c1', 'c2', 'root']);
      const result = await cancelTree(store, 'a', 'root', T0 + 1);
      expect(result.cancelled.sort()).toEqual(['c1', 'c2']);
      expect(await store.getRun('a', 'other')).toMatchObject({ status: 'queued' });
    });

    it('refuses a run caused by a cancelled tree (409 causer_cancelled); a plan decided before the cancel races', async () => {
      await tenant('a', { cascade: { skipKinds: [], skipCauses: ['event'] } });
      await admit(store, task('a', 'root', { kind: 'agent' }), T0);
      await admit(store, task('a', 'done', { cause: 'run', causedByRunId: 'root' }), T0);
      await release(store, { tenant: 'a', runId: 'done', status: 'failed' }, T0 + 1);
      // Decided while the tree is alive, committed after its root is cancelled.
      const key = { tenant: 'a', requestId: 'req-late', causedByRunId: 'done' };
      const late = decide(
        await store.loadAdmission(key),
        parseAdmissionRequest(task('a', 'late', { cause: 'run', causedByRunId: 'done' })),
        T0 + 2,
      );
      if (!('plan' in late)) throw new Error('expected an admissible plan');
      // Still alive: a finished run's settle may still cause work (a subscription answering it).
      expect(
        await admit(store, task('a', 'alive', { cause: 'event', causedByRunId: 'done' }), T0 + 2),
      ).toMatchObject({ outcome: 'admitted' });
      await release(store, { tenant: 'a', runId: 'root', status: 'cancelled' }, T0 + 3);

      const refused = { outcome: 'refused', rule: 'causer_cancelled', status: 409, retry: { when: 'never' } };
      expect(
        await admit(store, task('a', 'c1', { cause: 'run', causedByRunId: 'root' }), T0 + 4),
      ).toMatchObject(refused);
      // Through a finished run: the cancelled root's cascade reaches it.
      expect(
        await admit(store, task('a', 'c2', { cause: 'run', causedByRunId: 'done' }), T0 + 4),
      ).toMatchObject(refused);
      expect(await store.commitAdmission(late.plan)).toEqual({ status: 'raced' });
      // Opted out (cause `event`): it would survive the cascade, so it is admitted; so is what it causes.
      expect(
        await admit(store, task('a', 'e1', { cause: 'event', causedByRunId: 'done' }), T0 + 4),
      ).toMatchObject({ outcome: 'admitted' });
      expect(
        await admit(store, task('a', 'e2', { cause: 'run', causedByRunId: 'alive' }), T0 + 4),
      ).toMatchObject({
        outcome: 'admitted',
      });
      // Nothing of a refusal is written: no slot, the causers' children unchanged.
      for (const id of ['c1', 'c2', 'late']) expect(await store.getRun('a', id)).toBeNull();
      expect(await store.getRun('a', 'root')).toMatchObject({ status: 'cancelled', children: 1 });
      expect(await store.getRun('a', 'done')).toMatchObject({ children: 2 });
    });

    it('keeps the session pool: per-tenant and global caps, a member reserve, slots freed on close', async () => {
      await tenant('a', { session: { maxSessions: 2, memberReserve: 1 } });
      const open = (id: string, cause: 'member' | 'event') =>
        admit(
          store,
          task('a', id, { kind: 'sandbox', lifetime: 'session', cause, expectedDurationMs: 60_000 }),
          T0,
        );
      expect(await open('s1', 'event')).toMatchObject({ outcome: 'admitted', lane: 'session' });
      expect(await open('s2', 'event')).toMatchObject({ outcome: 'refused', rule: 'session_cap' });
      expect(await open('s3', 'member')).toMatchObject({ outcome: 'admitted' });
      expect(await store.getRun('a', 's3')).toMatchObject({ status: 'running', member: true });
      await release(store, { tenant: 'a', runId: 's1', status: 'succeeded' }, T0 + 1);
      expect(await open('s4', 'member')).toMatchObject({ outcome: 'admitted' });
      const load = (await store.loadAdmission({ tenant: 'a', requestId: 'x' })).load;
      expect(load.sessions).toEqual({ total: 2, member: 2 });
    });

    it('stops activations of a disabled agent and touches nothing admitted', async () => {
      await tenant('a');
      await admit(store, task('a', 'act-1', { kind: 'agent', agentId: 'bot' }), T0);
      await store.setAgentEnabled('a', 'bot', false);
      expect(await admit(store, task('a', 'act-2', { kind: 'agent', agentId: 'bot' }), T0)).toMatchObject({
        outcome: 'refused',
        rule: 'agent_disabled',
      });
      expect(await store.getRun('a', 'act-1')).toMatchObject({ status: 'queued' });
      await store.setAgentEnabled('a', 'bot', true);
      expect(await admit(store, task('a', 'act-2', { kind: 'agent', agentId: 'bot' }), T0)).toMatchObject({
        outcome: 'admitted',
      });
    });
  });
}

/** A plan for tenant `a` decided on `snap` (possibly stale by the time it is committed). */
function planFor(snap: AdmissionSnapshot, requestId: string, runId: string): AdmissionPlan {
  const verdict = decide(snap, parseAdmissionRequest(task('a', runId, { requestId })), T0);
  if (!('plan' in verdict)) throw new Error('expected an admissible plan');
  return verdict.plan;
}
