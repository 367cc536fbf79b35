// Turn leases on the real control plane follow the runner protocol's rules: a lease not renewed expires and
// the turn is leased again under a new epoch; the old holder is `lost` and its late report is
// `stale_lease` (nothing is written). (EVERDICT_LEASE_MS=1000: an unrenewed lease is found expired in ~1.2 s.
// No holder here heartbeats, so no expiry races a live heartbeat on a loaded machine; a test whose lease a
// heartbeat must keep runs on long leases: cancelling mid-interval is in interval-recovery.test.ts.)
import { dataOf } from '@everdict/client';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { isAgentError } from '../src/errors.js';
import { createAgent, leaseFor, message, recordOf, type Seat, seat } from './support.js';

let s: Seat;
beforeAll(async () => {
  s = await seat({ EVERDICT_LEASE_MS: '1000' });
}, 300_000);
afterAll(async () => {
  await s?.stop();
});

const leaseOf = (holder: string, runId: string) => leaseFor(s, holder, runId);

describe('turn leases', () => {
  it('an expired lease is granted again under a new epoch; the old holder is lost and its report is stale', async () => {
    const agentId = await createAgent(s, { tools: ['ask_approval'] });
    const runId = await message(s, agentId, 'hello');
    // Cancelled whatever happens: a turn left queued would be leased by the next test's worker instead.
    onTestFinished(async () => {
      await s.admin.POST('/runs/{id}/cancel', { params: { path: { id: runId } }, body: { reason: 'done' } });
    });
    const first = await leaseOf('host-a', runId);
    expect(first.epoch).toBe(1);
    // host-a never heartbeats: the sweep requeues the turn and host-b gets it at epoch 2.
    const second = await leaseOf('host-b', runId);
    expect(second.epoch).toBe(2);
    expect((await s.agents.heartbeat('host-a', [{ runId, epoch: 1 }])).lost).toEqual([runId]);
    const late = await s.agents
      .report(
        { runId, tenant: first.tenant, epoch: 1, holder: 'host-a' },
        { event: 'succeeded', account: { dispatched: [], resolved: [] } },
      )
      .catch((e: unknown) => e);
    expect(isAgentError(late) && late.code).toBe('stale_lease');
    // The stale report settled nothing. (host-b does not heartbeat either: on a loaded machine its 1 s lease
    // may have expired too by now and the turn be queued again — either way it is not settled.)
    const run = dataOf(await s.admin.GET('/runs/{id}', { params: { path: { id: runId } } }));
    expect(['running', 'queued']).toContain(run.status);
    expect((await recordOf(s, runId)).verify.length).toBe(0);
  }, 120_000);
});
