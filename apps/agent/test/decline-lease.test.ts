// A host that leases a parked turn it cannot resume — the record refuses its manifest — declines it, on the
// real control plane: the lease is released at once (no attempt counted; the next lease has the next epoch),
// the turn is not offered to that host again (while it declares the same capabilities: a process speaking that
// other protocol leases and declines under its own set), and another host resumes it; when no paired host is left that
// has not declined it, the turn fails `no_compatible_host`. Before, the interval threw, the lease sat until it
// expired, and the turn was leased again — to the same host — and refused again, for ever.
// (EVERDICT_LEASE_MS=60000: a lease left to expire would still be live for the whole test.)
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dataOf } from '@everdict/client';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { TurnLease } from '../src/control-plane.js';
import { isAgentError } from '../src/errors.js';
import { hostCapabilities } from '../src/host/capabilities.js';
import { type HostIdentity, hostIdentity } from '../src/host/pairing.js';
import { runInterval } from '../src/loop/interval.js';
import { asking, createAgent, leaseFor, message, recordOf, type Seat, seat } from './support.js';

/** Another agent protocol than the park's: the record refuses this process's manifest on resume. */
const OTHER_PROTOCOL = 'everdict-agent/transcript/2';
/** What a process speaking it declares on its lease requests and declines. */
const OTHER_CAPS = hostCapabilities(OTHER_PROTOCOL);

let s: Seat;
let dir: string;
let hostB: HostIdentity;
let hostC: HostIdentity;

async function pairHost(name: string): Promise<HostIdentity> {
  const host = await hostIdentity({
    url: s.cp.url,
    dir: join(dir, name),
    name,
    autoPair: { serviceToken: s.cp.internalToken },
  });
  if (!host) throw new Error(`${name} did not pair`);
  return host;
}

beforeAll(async () => {
  s = await seat({ EVERDICT_LEASE_MS: '60000' });
  dir = await mkdtemp(join(tmpdir(), 'agent-decline-'));
  // The only paired hosts of this control plane (shared: paired with the service token).
  hostB = await pairHost('host-b');
  hostC = await pairHost('host-c');
}, 300_000);
afterAll(async () => {
  await s?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A turn parked by an unpaired holder on an approval, then answered: ready to resume. */
async function readyPark(): Promise<string> {
  const agentId = await createAgent(s, { tools: ['ask_approval'] });
  const runId = await message(s, agentId, 'ship it');
  onTestFinished(async () => {
    await s.admin
      .POST('/runs/{id}/cancel', { params: { path: { id: runId } }, body: { reason: 'done' } })
      .catch(() => undefined);
  });
  const first = await leaseFor(s, 'host-a', runId);
  const parked = await runInterval(first, {
    controlPlane: s.agents,
    provider: () => asking,
    holder: 'host-a',
  });
  expect(parked.result).toBe('parked');
  await s.admin.POST('/runs/{id}/input', {
    params: { path: { id: runId } },
    body: { callId: 'call_ask', approved: true },
  });
  return runId;
}

/** `host` resumes `lease` speaking another protocol than the park's. */
const resumeOtherwise = (lease: TurnLease, host: HostIdentity) =>
  runInterval(lease, {
    controlPlane: s.agents,
    provider: () => asking,
    holder: host.hostId,
    signer: host.signer,
    protocol: OTHER_PROTOCOL,
  });

/** What `holder` is offered right now (no wait), declaring `capabilities` (default: this build's). */
const offeredNow = async (holder: string, capabilities?: readonly string[]) =>
  (await s.agents.lease({ free: 8, holder, waitMs: 0, ...(capabilities ? { capabilities } : {}) })).map(
    (l) => l.runId,
  );

const getRun = async (runId: string) =>
  dataOf(await s.admin.GET('/runs/{id}', { params: { path: { id: runId } } }));

describe('a parked turn this host cannot resume', () => {
  it('is declined (manifest_mismatch): released at once, not offered to it again under the same capabilities, resumed by another host', async () => {
    const runId = await readyPark();
    const leaseB = await leaseFor(s, hostB.hostId, runId, OTHER_CAPS);
    const out = await resumeOtherwise(leaseB, hostB);
    expect(out).toEqual({ result: 'declined', runId, reason: 'manifest_mismatch', outcome: 'requeued' });
    expect((await getRun(runId)).status).toBe('awaiting_input');
    expect((await recordOf(s, runId)).verify.phase).toBe('parked');

    // Not offered to host B again while it declares the same set; offered to host C at once (B's lease would
    // live 60 s), at the next epoch (epochs only rise).
    expect(await offeredNow(hostB.hostId, OTHER_CAPS)).not.toContain(runId);
    const leaseC = (await s.agents.lease({ free: 8, holder: hostC.hostId, waitMs: 0 })).find(
      (l) => l.runId === runId,
    );
    expect(leaseC?.epoch).toBe(leaseB.epoch + 1);
    if (!leaseC) throw new Error('unreachable');

    // A retried decline of B's lease answers the same and changes nothing; one of a lease not held (another
    // holder, an older epoch) is stale_lease and changes nothing: C's lease stands.
    const refB = { runId, tenant: leaseB.tenant, epoch: leaseB.epoch, holder: hostB.hostId };
    expect(await s.agents.decline(refB, { reason: 'manifest_mismatch', capabilities: OTHER_CAPS })).toEqual({
      outcome: 'requeued',
      declinedBy: [hostB.hostId],
    });
    for (const ref of [
      { ...refB, holder: 'host-d' },
      { ...refB, epoch: leaseB.epoch - 1 },
    ]) {
      const err = await s.agents.decline(ref, { reason: 'manifest_mismatch' }).catch((e: unknown) => e);
      expect(isAgentError(err) && err.code).toBe('stale_lease');
    }
    expect(await offeredNow('host-d')).not.toContain(runId);

    // Host C speaks the park's protocol: it resumes the turn and settles it; the record verifies.
    const done = await runInterval(leaseC, {
      controlPlane: s.agents,
      provider: () => asking,
      holder: hostC.hostId,
      signer: hostC.signer,
    });
    expect(done).toMatchObject({ result: 'succeeded', runId, summary: 'shipped' });
    const { verify } = await recordOf(s, runId);
    expect(verify).toMatchObject({ ok: true, phase: 'closed' });
  }, 120_000);

  it('fails no_compatible_host once every paired host that could take it declined it', async () => {
    const runId = await readyPark();
    const b = await resumeOtherwise(await leaseFor(s, hostB.hostId, runId, OTHER_CAPS), hostB);
    expect(b).toMatchObject({ result: 'declined', outcome: 'requeued' });
    const c = await resumeOtherwise(await leaseFor(s, hostC.hostId, runId, OTHER_CAPS), hostC);
    expect(c).toMatchObject({ result: 'declined', reason: 'manifest_mismatch', outcome: 'failed' });
    const run = await getRun(runId);
    expect(run.status).toBe('failed');
    expect(run.error).toMatchObject({ code: 'no_compatible_host' });
    expect(run.error?.message).toContain(hostB.hostId);
    expect((await recordOf(s, runId)).verify.phase).toBe('closed');
  }, 120_000);
});
