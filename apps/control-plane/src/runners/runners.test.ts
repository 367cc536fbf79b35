// The runner protocol on the real core (a PGlite core per file, the real app in-process): pairing, leases in
// WFQ order restricted by capabilities and tenant scope, events, a signed interval verified and appended,
// fencing by epoch, revocation and expiry requeueing, drain, the harness registry, eval experiments.
import { randomBytes } from 'node:crypto';
import {
  buildAttestation,
  encodeAttestationBody,
  generateSigningKey,
  type Hex,
  type SigningKey,
  signAttestation,
  verifyWire,
} from '@everdict/runrecord';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, call, INTERNAL_TOKEN, type TestApp, testApp } from '../http/testing/harness.js';
import { pairingProof } from '../http/testing/runners.js';
import { leasePolicy } from '../leases/policy.js';
import { journalRootOf } from './intervals.js';
import { sweep } from './leases.js';

let t: TestApp;
let offsetMs = 0;
const clock = () => new Date(Date.now() + offsetMs);

beforeAll(async () => {
  t = await testApp({ executors: [], clock });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

interface Runner {
  id: string;
  credential: string;
  key: SigningKey;
}

interface LeaseBody {
  runId: string;
  tenant: string;
  kind: string;
  epoch: number;
  unitId: Hex;
  grantsId: Hex;
  recordHead: Hex;
  harness?: { id: string; version: string; image: string; command: string[] };
}

const CAPS = { drivers: ['process'], kinds: ['command', 'eval'], images: ['default'], slots: 8 };

async function pairRunner(adminKey: string | null, caps: object = CAPS, name = 'r'): Promise<Runner> {
  const minted =
    adminKey === null
      ? await call(t.app, 'POST', '/internal/runners/pairing-tokens', {
          key: INTERNAL_TOKEN,
          body: { name },
        })
      : await call(t.app, 'POST', '/runners/pairing-tokens', { key: adminKey, body: { name } });
  expect(minted.status, JSON.stringify(minted.body)).toBe(201);
  const key = generateSigningKey(randomBytes(32));
  const paired = await call(t.app, 'POST', '/runners/pair', {
    key: null,
    body: {
      token: minted.body.token,
      ...pairingProof(String(minted.body.token), key),
      name,
      capabilities: caps,
    },
  });
  expect(paired.status, JSON.stringify(paired.body)).toBe(201);
  return { id: String(paired.body.runnerId), credential: String(paired.body.credential), key };
}

const lease = async (r: Runner, free = 1, waitMs = 0) => {
  const res = await call(t.app, 'POST', '/runner/v1/leases', { key: r.credential, body: { free, waitMs } });
  return { status: res.status, leases: (res.body.leases ?? []) as LeaseBody[], body: res.body };
};

const command = (key = ADMIN_KEY, argv = ['true']) =>
  call(t.app, 'POST', '/runs', { key, body: { kind: 'command', subject: { command: argv } } });

function signedInterval(r: Runner, l: LeaseBody, events: unknown[], over: Record<string, unknown> = {}) {
  const { attestation } = buildAttestation({
    unitId: l.unitId,
    grantsId: l.grantsId,
    recordHead: l.recordHead,
    startedMs: 1_764_547_200_000n,
    endedMs: 1_764_547_200_250n,
    activeUj: 1_250_000n,
    provenance: 'estimated',
    meter: 'cgroup-cpu-model',
    journalRoot: journalRootOf(events) as Hex,
    outcome: 'succeeded',
    exitCode: 0,
    ...over,
  });
  return encodeAttestationBody(signAttestation(attestation, r.key.secretKey).body);
}

const events = (runId: string) => [
  {
    type: 'log',
    seq: 0,
    ts: '2026-12-01T21:00:00.000Z',
    runId,
    level: 'info',
    message: 'hello',
    stream: 'stdout',
  },
];

describe('runners', { timeout: 120_000 }, () => {
  let a: Runner;

  it('a command run is 422 no_placement until a runner declares its kind and image', async () => {
    const before = await command();
    expect(before.status).toBe(422);
    expect(before.body.code).toBe('no_placement');
    a = await pairRunner(ADMIN_KEY);
    expect((await command()).status).toBe(201);
    const other = await call(t.app, 'POST', '/runs', {
      body: { kind: 'command', subject: { command: ['true'], image: 'alpine:3.20' } },
    });
    expect(other.body.code).toBe('no_placement');
  });

  it('a pairing token is single use; pairing needs no API key; a bad credential is 401', async () => {
    const minted = await call(t.app, 'POST', '/runners/pairing-tokens', { body: {} });
    const key = generateSigningKey(randomBytes(32));
    const body = {
      token: minted.body.token,
      ...pairingProof(String(minted.body.token), key),
      name: 'x',
      capabilities: CAPS,
    };
    expect((await call(t.app, 'POST', '/runners/pair', { key: null, body })).status).toBe(201);
    const again = await call(t.app, 'POST', '/runners/pair', { key: null, body });
    expect(again.status).toBe(401);
    expect(again.body.code).toBe('invalid_pairing_token');
    const member = await t.key('member');
    expect((await call(t.app, 'POST', '/runners/pairing-tokens', { key: member, body: {} })).status).toBe(
      403,
    );
    const bad = await call(t.app, 'POST', '/runner/v1/leases', { key: 'evr_nope', body: { free: 1 } });
    expect(bad.status).toBe(401);
    expect(bad.body.code).toBe('invalid_runner_credential');
  });

  it('pair → lease → events → signed completion: the record verifies with the runner key', async () => {
    // drain the queue first (the run created above)
    const got = await lease(a, 8);
    expect(got.status).toBe(200);
    expect(got.leases.length).toBeGreaterThan(0);
    const l = got.leases[0]!;
    expect(l.epoch).toBe(1);
    const EVENTS = events(l.runId);
    const foreign = await call(t.app, 'POST', `/runner/v1/runs/${l.runId}/events`, {
      key: a.credential,
      body: { epoch: l.epoch, events: events('run_other') },
    });
    expect(foreign.status).toBe(400);
    const ev = await call(t.app, 'POST', `/runner/v1/runs/${l.runId}/events`, {
      key: a.credential,
      body: { epoch: l.epoch, events: EVENTS },
    });
    expect(ev.status, JSON.stringify(ev.body)).toBe(202);
    expect(ev.body.eventCount).toBe(1);
    const hb = await call(t.app, 'POST', '/runner/v1/heartbeat', {
      key: a.credential,
      body: { leases: got.leases.map((x) => ({ runId: x.runId, epoch: x.epoch })) },
    });
    expect(hb.body).toEqual({ lost: [], draining: false });

    // Refusals change nothing: stale epoch, another key, a journal root that is not the stored events.
    const attestation = signedInterval(a, l, EVENTS);
    const outputs = { exitCode: 0, result: { stdout: 'hello\n', stderr: '', truncated: false } };
    const stale = await call(t.app, 'POST', `/runner/v1/runs/${l.runId}/complete`, {
      key: a.credential,
      body: { epoch: 2, outputs, attestation },
    });
    expect(stale.status).toBe(409);
    expect(stale.body.code).toBe('stale_lease');
    const intruder = { ...a, key: generateSigningKey(randomBytes(32)) };
    const forged = await call(t.app, 'POST', `/runner/v1/runs/${l.runId}/complete`, {
      key: a.credential,
      body: { epoch: 1, outputs, attestation: signedInterval(intruder, l, EVENTS) },
    });
    expect(forged.status).toBe(409);
    expect(forged.body.code).toBe('attestation_mismatch');
    const wrongRoot = await call(t.app, 'POST', `/runner/v1/runs/${l.runId}/complete`, {
      key: a.credential,
      body: { epoch: 1, outputs, attestation: signedInterval(a, l, []) },
    });
    expect(wrongRoot.body.code).toBe('attestation_mismatch');
    expect((await call(t.app, 'GET', `/runs/${l.runId}`)).body.status).toBe('running');

    const done = await call(t.app, 'POST', `/runner/v1/runs/${l.runId}/complete`, {
      key: a.credential,
      body: { epoch: 1, outputs, attestation, account: { dispatched: [], resolved: [] } },
    });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    const run = done.body.run as { status: string; outputs: Record<string, unknown> };
    expect(run.status).toBe('succeeded');
    expect(run.outputs.exitCode).toBe(0);
    expect(run.outputs.result).toEqual(outputs.result);
    // Idempotent: the same epoch and attestation again → 200, nothing appended twice.
    const again = await call(t.app, 'POST', `/runner/v1/runs/${l.runId}/complete`, {
      key: a.credential,
      body: { epoch: 1, outputs, attestation },
    });
    expect(again.status).toBe(200);

    const rec = await call(t.app, 'GET', `/runs/${l.runId}/record`);
    const wire = rec.body.wire as Parameters<typeof verifyWire>[0];
    const v = verifyWire(JSON.parse(JSON.stringify(wire)), { trustKeys: [a.key.publicKey] });
    expect(v.ok, v.ok ? '' : `${v.error} at ${v.index}`).toBe(true);
    if (v.ok) {
      expect(v.signedBy).toContain(a.key.publicKey);
      expect(v.phase).toBe('closed');
      expect(v.length).toBe(2); // executed + closed: exactly one executed segment
    }
    // The heartbeat now says the lease is gone.
    const after = await call(t.app, 'POST', '/runner/v1/heartbeat', {
      key: a.credential,
      body: { leases: [{ runId: l.runId, epoch: 1 }] },
    });
    expect(after.body.lost).toEqual([l.runId]);
    // GET /keys lists the runner's key.
    const keys = await call(t.app, 'GET', '/keys', { key: null });
    const list = keys.body.keys as { kind: string; id: string; key: string }[];
    expect(list).toContainEqual(expect.objectContaining({ kind: 'runner', id: a.id, key: a.key.publicKey }));
    // Settle the rest so later tests start from an empty queue for tenant default.
    for (const other of got.leases.slice(1)) {
      const r = await call(t.app, 'POST', `/runner/v1/runs/${other.runId}/complete`, {
        key: a.credential,
        body: { epoch: other.epoch, outputs: {}, attestation: signedInterval(a, other, []) },
      });
      expect(r.status).toBe(200);
    }
  });

  it('a tenant-scoped runner is never offered another tenant’s run', async () => {
    const bKey = await t.tenant('tenant-b');
    const b = await pairRunner(bKey, CAPS, 'b-runner');
    const bRuns: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await command(bKey);
      expect(r.status).toBe(201);
      bRuns.push(String((r.body.run as { id: string }).id));
    }
    // A (tenant default) asks repeatedly: never B's runs.
    for (let i = 0; i < 3; i++) expect((await lease(a, 8)).leases).toEqual([]);
    const mine = await command();
    const offered = await lease(a, 8);
    expect(offered.leases.map((l) => l.runId)).toEqual([(mine.body.run as { id: string }).id]);
    expect(offered.leases.every((l) => l.tenant === 'default')).toBe(true);
    const toB = await lease(b, 8);
    expect(toB.leases.map((l) => l.runId).sort()).toEqual([...bRuns].sort());
    expect(toB.leases.every((l) => l.tenant === 'tenant-b')).toBe(true);
    // B's runner is not in default's list; default's admin cannot revoke it (404).
    const listed = await call(t.app, 'GET', '/runners');
    const ids = (listed.body.items as { id: string }[]).map((r) => r.id);
    expect(ids).toContain(a.id);
    expect(ids).not.toContain(b.id);
    expect((await call(t.app, 'POST', `/runners/${b.id}/revoke`)).status).toBe(404);
    // Leave tenant default's held lease to the revocation test.
  });

  it('revoke: the next call is 401, its leases end at once and their runs requeue', async () => {
    const held = (await call(t.app, 'GET', '/runners')).body.items as { id: string; leasesHeld: number }[];
    expect(held.find((r) => r.id === a.id)?.leasesHeld).toBe(1);
    const revoked = await call(t.app, 'POST', `/runners/${a.id}/revoke`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.state).toBe('revoked');
    const requeued = revoked.body.requeued as string[];
    expect(requeued).toHaveLength(1);
    const runId = requeued[0]!;
    expect((await call(t.app, 'GET', `/runs/${runId}`)).body.status).toBe('queued');
    const hb = await call(t.app, 'POST', '/runner/v1/heartbeat', {
      key: a.credential,
      body: { leases: [{ runId, epoch: 1 }] },
    });
    expect(hb.status).toBe(401);
    // Another runner takes it under the next epoch; the revoked key stays listed, marked.
    const c = await pairRunner(ADMIN_KEY, CAPS, 'c');
    const l = await lease(c, 1);
    expect(l.leases.map((x) => [x.runId, x.epoch])).toEqual([[runId, 2]]);
    const keys = (await call(t.app, 'GET', '/keys', { key: null })).body.keys as {
      id: string;
      revokedAt?: string;
    }[];
    expect(keys.find((k) => k.id === a.id)?.revokedAt).toBeTruthy();
    // A lease nobody heartbeats expires and its run requeues (the clock moves past leaseMs).
    offsetMs += 11_000;
    expect(await sweep(t.core.internals.deps, leasePolicy())).toContain(runId);
    expect((await call(t.app, 'GET', `/runs/${runId}`)).body.status).toBe('queued');
    const late = await call(t.app, 'POST', `/runner/v1/runs/${runId}/events`, {
      key: c.credential,
      body: { epoch: 2, events: events(runId) },
    });
    expect(late.status).toBe(409);
    expect(late.body.code).toBe('stale_lease');
    // Drain: no new leases, the heartbeat says so.
    expect((await call(t.app, 'POST', `/runners/${c.id}/drain`)).body.state).toBe('draining');
    expect((await lease(c, 4)).leases).toEqual([]);
    const hb2 = await call(t.app, 'POST', '/runner/v1/heartbeat', {
      key: c.credential,
      body: { leases: [] },
    });
    expect(hb2.body).toEqual({ lost: [], draining: true });
    // A fresh runner picks the run up (epoch 3).
    const d = await pairRunner(ADMIN_KEY, CAPS, 'd');
    expect((await lease(d, 1)).leases.map((x) => [x.runId, x.epoch])).toEqual([[runId, 3]]);
  });

  it('a waiting lease request is answered when a run is created', async () => {
    const e = await pairRunner(ADMIN_KEY, { ...CAPS, images: ['busybox'] }, 'e');
    const waiting = lease(e, 1, 20_000);
    const created = await call(t.app, 'POST', '/runs', {
      body: { kind: 'command', subject: { command: ['true'], image: 'busybox' } },
    });
    expect(created.status).toBe(201);
    const got = await waiting;
    expect(got.leases.map((l) => l.runId)).toEqual([(created.body.run as { id: string }).id]);
  });

  it('harnesses are immutable; an experiment of N eval runs is one POST /groups; the lease carries the harness', async () => {
    const h = { id: 'swe-mini', version: '1', image: 'default', command: ['node', 'harness.js'] };
    const first = await call(t.app, 'POST', '/harnesses', { body: h });
    expect(first.status).toBe(201);
    expect((await call(t.app, 'POST', '/harnesses', { body: h })).status).toBe(200);
    const changed = await call(t.app, 'POST', '/harnesses', { body: { ...h, command: ['other'] } });
    expect(changed.status).toBe(409);
    expect(changed.body.code).toBe('harness_conflict');
    const listed = await call(t.app, 'GET', '/harnesses');
    expect((listed.body.items as unknown[]).length).toBe(1);
    const unknown = await call(t.app, 'POST', '/runs', {
      body: { kind: 'eval', subject: { harness: { id: 'nope', version: '1' }, caseId: 'c' } },
    });
    expect(unknown.status).toBe(404);

    const ev = await pairRunner(ADMIN_KEY, { ...CAPS, kinds: ['eval'] }, 'eval-runner');
    const g = await call(t.app, 'POST', '/groups', {
      body: {
        kind: 'experiment',
        spec: { kind: 'eval', subject: { harness: { id: 'swe-mini', version: '1' }, caseId: 'x' } },
        cases: [
          { id: 'a', input: 1 },
          { id: 'b', input: 2 },
          { id: 'c', input: 3 },
        ],
      },
    });
    expect(g.status, JSON.stringify(g.body)).toBe(201);
    const runIds = (g.body.group as { runIds: string[] }).runIds;
    expect(runIds).toHaveLength(3);
    const got = await lease(ev, 8);
    expect(got.leases.map((l) => l.runId).sort()).toEqual([...runIds].sort());
    for (const l of got.leases) expect(l.harness).toEqual(h);
  });
});
