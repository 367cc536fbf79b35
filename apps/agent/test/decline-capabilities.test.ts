// A paired host's decline is keyed to the capability set it declares, on the real control plane: the agent
// service declares it (host/capabilities.ts: build, manifest basis, protocol) on every lease request and
// decline. A host process whose manifest the park refuses declines it and is not offered it again while it
// runs as that process; restarted as a process with another manifest (here: the park's protocol), the same
// host is offered the turn again and resumes it. Before, the agent declared nothing, so one decline barred
// the host from the turn for good — whatever build or manifest it restarted with.
// (EVERDICT_LEASE_MS=60000: a lease left to expire would still be live for the whole test.)
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dataOf } from '@everdict/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostCapabilities } from '../src/host/capabilities.js';
import { type HostIdentity, hostIdentity } from '../src/host/pairing.js';
import { HttpControlPlane } from '../src/http/http-control-plane.js';
import { type WorkerOptions, workOnce } from '../src/loop/worker.js';
import { asking, createAgent, message, recordOf, type Seat, seat } from './support.js';

/** Another agent protocol than the park's: the record refuses the manifest of a process speaking it. */
const OTHER_PROTOCOL = 'everdict-agent/transcript/2';

let s: Seat;
let dir: string;
let hostB: HostIdentity;

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
  dir = await mkdtemp(join(tmpdir(), 'agent-decline-caps-'));
  hostB = await pairHost('host-b');
  // A second paired host that never leases: B's decline leaves the turn ready (not `no_compatible_host`).
  await pairHost('host-idle');
}, 300_000);
afterAll(async () => {
  await s?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Sent {
  readonly path: string;
  readonly body: { capabilities?: unknown };
}

/**
 * Host B as one process: its own HttpControlPlane (a restart makes a new one), speaking `protocol`
 * (default: this build's); what it sends to the lease and decline routes is kept in `sent`.
 */
function hostProcess(sent: Sent[], protocol?: string): WorkerOptions {
  const recording: typeof fetch = async (input, init) => {
    const req = new Request(input, init);
    const path = new URL(req.url).pathname;
    if (path.endsWith('/leases') || path.endsWith('/decline'))
      sent.push({ path, body: (await req.clone().json()) as Sent['body'] });
    return fetch(req);
  };
  return {
    controlPlane: new HttpControlPlane({
      url: s.cp.url,
      token: s.cp.internalToken,
      pollMs: 25,
      fetch: recording,
    }),
    provider: () => asking,
    holder: hostB.hostId,
    signer: hostB.signer,
    slots: 4,
    ...(protocol ? { protocol } : {}),
  };
}

/** A turn parked by an unpaired holder (this build's protocol) on an approval, then answered: ready to resume. */
async function readyPark(): Promise<string> {
  const agentId = await createAgent(s, { tools: ['ask_approval'] });
  const runId = await message(s, agentId, 'ship it');
  const first = await workOnce({ controlPlane: s.agents, provider: () => asking, holder: 'host-a' }, 5000);
  expect(first).toEqual([expect.objectContaining({ result: 'parked', runId })]);
  await s.admin.POST('/runs/{id}/input', {
    params: { path: { id: runId } },
    body: { callId: 'call_ask', approved: true },
  });
  return runId;
}

describe('a host that declined a park', () => {
  it('is not offered it again under the same manifest, and is after it restarts with another', async () => {
    const runId = await readyPark();

    // Host B runs as a process speaking another protocol: the park refuses its manifest; it declines.
    const sentOther: Sent[] = [];
    const other = hostProcess(sentOther, OTHER_PROTOCOL);
    expect(await workOnce(other, 5000)).toEqual([
      { result: 'declined', runId, reason: 'manifest_mismatch', outcome: 'requeued' },
    ]);
    // Every lease request and the decline declared this process's capability set.
    const otherCaps = hostCapabilities(OTHER_PROTOCOL);
    expect(sentOther.map((x) => x.path.split('/').pop())).toEqual(['leases', 'decline']);
    for (const x of sentOther) expect(x.body.capabilities).toEqual(otherCaps);

    // The same process is not offered the turn again: it is ready (no live lease: the decline released it)…
    expect(await workOnce(other, 0)).toEqual([]);
    expect((await recordOf(s, runId)).verify.phase).toBe('parked');
    const input = dataOf(await s.admin.GET('/runs/{id}/input', { params: { path: { id: runId } } }));
    expect(input).toMatchObject({ status: 'awaiting_input', declined: [{ holder: hostB.hostId }] });

    // … and host B restarted with this build's manifest is offered it at once, resumes it and settles it.
    const sent: Sent[] = [];
    const restarted = hostProcess(sent);
    expect(await workOnce(restarted, 0)).toEqual([{ result: 'succeeded', runId, summary: 'shipped' }]);
    expect(sent[0]?.body.capabilities).toEqual(hostCapabilities());
    expect(hostCapabilities()).not.toEqual(otherCaps);
    const { verify } = await recordOf(s, runId);
    expect(verify).toMatchObject({ ok: true, phase: 'closed' });
  }, 120_000);
});
