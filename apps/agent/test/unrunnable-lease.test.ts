// A lease this host can read but must not run — its agent was disabled while the turn was parked — is
// settled `failed` (`agent_disabled`), which releases it, on the real control plane. Before, the interval
// threw before it began, reported nothing, and the lease sat until it expired: a parked turn was then
// ready again and leased again, and refused again, every lease period, for ever.
// (EVERDICT_LEASE_MS=60000: the intervals run without a heartbeat, so a loaded machine must not expire their
// leases meanwhile; nothing here waits for an expiry.)
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dataOf } from '@everdict/client';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { hostIdentity } from '../src/host/pairing.js';
import { runInterval } from '../src/loop/interval.js';
import { asking, createAgent, leaseFor, message, type Seat, seat } from './support.js';

let s: Seat;
beforeAll(async () => {
  s = await seat({ EVERDICT_LEASE_MS: '60000' });
}, 300_000);
afterAll(async () => {
  await s?.stop();
});

const leaseOf = (holder: string, runId: string) => leaseFor(s, holder, runId);

describe('a lease that cannot be run', () => {
  it('a parked turn of an agent disabled since is failed agent_disabled, not left to expire', async () => {
    const agentId = await createAgent(s, { tools: ['ask_approval'] });
    const runId = await message(s, agentId, 'ship it');
    onTestFinished(async () => {
      await s.admin
        .POST('/runs/{id}/cancel', { params: { path: { id: runId } }, body: { reason: 'done' } })
        .catch(() => undefined);
    });
    const first = await leaseOf('host-a', runId);
    const parked = await runInterval(first, {
      controlPlane: s.agents,
      provider: () => asking,
      holder: 'host-a',
    });
    expect(parked.result).toBe('parked');
    await s.admin.PATCH('/agents/{id}', { params: { path: { id: agentId } }, body: { enabled: false } });
    await s.admin.POST('/runs/{id}/input', {
      params: { path: { id: runId } },
      body: { callId: 'call_ask', approved: true },
    });
    // Host B is a paired host: its `failed` report carries the interval attestation it signs.
    const dir = await mkdtemp(join(tmpdir(), 'agent-disabled-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const hostB = await hostIdentity({
      url: s.cp.url,
      dir,
      name: 'host-b',
      autoPair: { serviceToken: s.cp.internalToken },
    });
    if (!hostB) throw new Error('host B did not pair');
    const again = await leaseOf(hostB.hostId, runId);
    expect(again.agent.enabled).toBe(false);
    const out = await runInterval(again, {
      controlPlane: s.agents,
      provider: () => asking,
      holder: hostB.hostId,
      signer: hostB.signer,
    });
    expect(out).toMatchObject({ result: 'failed', runId, error: { code: 'agent_disabled' } });
    const run = dataOf(await s.admin.GET('/runs/{id}', { params: { path: { id: runId } } }));
    expect(run.status).toBe('failed');
    expect(JSON.stringify(run)).toContain('agent_disabled');
    const record = dataOf(await s.admin.GET('/runs/{id}/record', { params: { path: { id: runId } } }));
    expect(record.verify).toMatchObject({ phase: 'closed' });
    // (a parked turn's failure ends no interval: the record closes, host B's report was accepted)
  }, 60_000);
});
