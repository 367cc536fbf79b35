// Issue 16 item 4 on the real core (migrated PGlite) through the real app: an agent host pairs with its own
// Ed25519 key (POST /agents/hosts/pair; GET /keys lists it), signs each interval it ends, and the turn's
// record verifies offline trusting ONLY that key (runrecord's verifyWire, as `everdict-runrecord verify
// --trust-key`); altering a bundled field fails with the spec's code; a report signed by another key, bound
// to another head or missing its attestation is 409 `attestation_mismatch` and changes nothing; an unpaired
// holder's attestation is refused (unknown key) while its unsigned report is sealed by the control plane's
// key, as `signedBy` says.
import { randomBytes } from 'node:crypto';
import {
  type Attestation,
  encodeAttestationBody,
  generateSigningKey,
  type Hex,
  signAttestation,
  verifyWire,
} from '@everdict/runrecord';
import { canonicalJsonl, digestOf } from '@everdict/trajectory-store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, callInternal, type TestApp, testApp } from '../http/testing/harness.js';
import { agentHostPairingProof } from '../http/testing/runners.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const internal = (method: string, path: string, body?: unknown) => callInternal(t.app, method, path, body);
const MANIFEST = 'c'.repeat(64);
type Lease = { runId: string; epoch: number; unitId: Hex; grantsId: Hex; recordHead: Hex };
type Run = { status: string; record: { head: string; length: number } };

async function pairHost(name: string) {
  const key = generateSigningKey(randomBytes(32));
  const minted = await internal('POST', '/internal/runners/pairing-tokens', {});
  expect(minted.status).toBe(201);
  const token = minted.body.token as string;
  const proof = agentHostPairingProof(token, key);
  const paired = await call(t.app, 'POST', '/agents/hosts/pair', {
    key: null,
    body: { token, ...proof, name },
  });
  expect(paired.status, JSON.stringify(paired.body)).toBe(201);
  const again = await call(t.app, 'POST', '/agents/hosts/pair', {
    key: null,
    body: { token, ...proof, name },
  });
  expect(again.body.code).toBe('invalid_pairing_token'); // single use
  return { key, hostId: paired.body.hostId as string };
}

/** A queued turn of the tenant `key` belongs to (default: tenant `default`'s admin): its run id. */
async function queueTurn(key?: string): Promise<string> {
  const k = key === undefined ? {} : { key };
  const a = await call(t.app, 'POST', '/agents', {
    ...k,
    body: { name: 'signer', model: 'scripted', tools: ['ask_approval'] },
  });
  const agentId = (a.body.agent as { id: string }).id;
  const conv = await call(t.app, 'POST', '/conversations', { ...k, body: { agentId } });
  const convId = (conv.body.group as { id: string }).id;
  const msg = await call(t.app, 'POST', `/conversations/${convId}/messages`, { ...k, body: { text: 'hi' } });
  expect(msg.status).toBe(202);
  return (msg.body.run as { id: string }).id;
}

async function newTurn(holder: string): Promise<Lease> {
  const runId = await queueTurn();
  const r = await internal('POST', '/internal/agent/v1/leases', { holder, free: 1 });
  const lease = (r.body.leases as Lease[])[0]!;
  expect(lease.runId).toBe(runId);
  return lease;
}

/** Append events to the turn's transcript; answer its stored address (what the agent names). */
async function write(lease: Lease, holder: string, events: Record<string, unknown>[]) {
  const page = await internal('GET', `/internal/agent/v1/runs/${lease.runId}/transcript?offset=0&limit=1000`);
  const from = page.body.eventCount as number;
  const numbered = events.map((e, i) => ({
    ...e,
    seq: from + i,
    ts: new Date().toISOString(),
    runId: lease.runId,
  }));
  const w = await internal('POST', `/internal/agent/v1/runs/${lease.runId}/transcript`, {
    holder,
    epoch: lease.epoch,
    events: numbered,
  });
  expect(w.status).toBe(202);
  const all = await internal('GET', `/internal/agent/v1/runs/${lease.runId}/transcript?offset=0&limit=1000`);
  const text = canonicalJsonl(all.body.events as never);
  return { address: (await digestOf(text)).slice('blake3:'.length) as Hex, bytes: text.length };
}

function attest(lease: Lease, head: Hex, journalRoot: Hex, outcome: Attestation['outcome'], sk: Uint8Array) {
  const { body } = signAttestation(
    {
      unitId: lease.unitId,
      grantsId: lease.grantsId,
      recordHead: head,
      startedMs: 1_000n,
      endedMs: 2_000n,
      activeUj: 2_000_000n,
      provenance: 'estimated',
      meter: 'agent-wallclock-model',
      journalRoot,
      outcome,
      exitCode: outcome === 'failed' ? 1 : 0,
    },
    sk,
  );
  return encodeAttestationBody(body);
}

const report = (lease: Lease, holder: string, body: Record<string, unknown>) =>
  internal('POST', '/internal/agent-run-events', { runId: lease.runId, holder, epoch: lease.epoch, ...body });
const runOf = async (id: string) => (await call(t.app, 'GET', `/runs/${id}`)).body as unknown as Run;

describe('agent hosts: a paired host signs its intervals', () => {
  it('pairs, is listed by GET /keys, and its turn verifies offline with its key alone', async () => {
    const { key, hostId } = await pairHost('host-signed');
    const other = generateSigningKey(randomBytes(32));
    const keys = await call(t.app, 'GET', '/keys', { key: null });
    expect(keys.body.keys).toContainEqual({
      kind: 'agent-host',
      id: hostId,
      name: 'host-signed',
      key: key.publicKey,
    });
    const cpKey = (keys.body.keys as { kind: string; key: string }[]).find(
      (k) => k.kind === 'control-plane',
    )!.key;

    const lease = await newTurn(hostId);
    const dispatched = await internal('POST', `/internal/agent/v1/runs/${lease.runId}/calls`, {
      holder: hostId,
      epoch: 1,
      callId: 'call_1',
      tool: 'ask_approval',
      input: { question: 'ok?' },
    });
    expect(dispatched.status).toBe(201);
    const t1 = await write(lease, hostId, [{ type: 'message', role: 'user', content: 'hi' }]);
    const park = {
      event: 'awaiting_input',
      transcript: t1.address,
      transcriptBytes: t1.bytes,
      manifest: MANIFEST,
      account: { dispatched: ['call_1'], resolved: [] },
    };
    const before = await runOf(lease.runId);
    // Refused, nothing written: another key, another head, another outcome, another journal, none at all.
    const refusals: [string, object | undefined][] = [
      ['other key', attest(lease, lease.recordHead, t1.address, 'yielded', other.secretKey)],
      ['other head', attest(lease, 'd'.repeat(64) as Hex, t1.address, 'yielded', key.secretKey)],
      ['other outcome', attest(lease, lease.recordHead, t1.address, 'succeeded', key.secretKey)],
      ['other journal', attest(lease, lease.recordHead, 'e'.repeat(64) as Hex, 'yielded', key.secretKey)],
      ['unsigned', undefined],
    ];
    for (const [why, attestation] of refusals) {
      const r = await report(lease, hostId, { ...park, ...(attestation ? { attestation } : {}) });
      expect([why, r.status, r.body.code]).toEqual([why, 409, 'attestation_mismatch']);
    }
    const forged = attest(lease, lease.recordHead, t1.address, 'yielded', key.secretKey);
    (forged.signature as { sig: string }).sig = '0'.repeat(128);
    expect((await report(lease, hostId, { ...park, attestation: forged })).body.code).toBe(
      'attestation_mismatch',
    );
    expect(await runOf(lease.runId)).toMatchObject({ status: 'running', record: before.record });

    const parked = await report(lease, hostId, {
      ...park,
      attestation: attest(lease, lease.recordHead, t1.address, 'yielded', key.secretKey),
    });
    expect(parked.status, JSON.stringify(parked.body)).toBe(200);
    expect(parked.body.status).toBe('awaiting_input');

    // The approval arrives; the host leases the park, resumes, and closes it with a second signed interval.
    expect(
      (
        await call(t.app, 'POST', `/runs/${lease.runId}/input`, {
          body: { callId: 'call_1', approved: true },
        })
      ).status,
    ).toBe(200);
    const l2 = (
      (await internal('POST', '/internal/agent/v1/leases', { holder: hostId, free: 1 })).body
        .leases as Lease[]
    )[0]!;
    expect(l2).toMatchObject({ runId: lease.runId, epoch: 2 });
    const resumed = await report(l2, hostId, {
      event: 'resumed',
      transcript: t1.address,
      manifest: MANIFEST,
    });
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    const head2 = (resumed.body as unknown as Run).record.head as Hex;
    const t2 = await write(l2, hostId, [{ type: 'message', role: 'assistant', content: 'done' }]);
    const done = await report(l2, hostId, {
      event: 'succeeded',
      transcript: t2.address,
      account: { dispatched: [], resolved: ['call_1'] },
      outputs: { summary: 'done' },
      attestation: attest(l2, head2, t2.address, 'succeeded', key.secretKey),
    });
    expect(done.status, JSON.stringify(done.body)).toBe(200);

    const rec = await call(t.app, 'GET', `/runs/${lease.runId}/record`);
    const wire = rec.body.wire as Record<string, unknown>;
    expect(rec.body.verify).toMatchObject({
      ok: true,
      phase: 'closed',
      account: 'non_blocking',
      signedBy: [key.publicKey],
    });
    expect(verifyWire(wire, { trustKeys: [key.publicKey] })).toMatchObject({ ok: true, phase: 'closed' });
    expect(verifyWire(wire, { trustKeys: [cpKey] })).toMatchObject({
      ok: false,
      error: 'UntrustedAttestation',
    });
    // Alter one field of a bundled attestation: its address no longer is the one the chain commits to.
    const bundle = structuredClone(wire.attestations) as Record<string, Record<string, unknown>>;
    const first = Object.keys(bundle)[0]!;
    bundle[first]!.active_uj = '1';
    expect(verifyWire({ ...wire, attestations: bundle }, { trustKeys: [key.publicKey] })).toMatchObject({
      ok: false,
      error: 'AttestationMismatch',
    });
  });

  it('an unpaired holder: its attestation is refused (unknown key), its unsigned report sealed by the control plane', async () => {
    const { key } = await pairHost('host-other');
    const lease = await newTurn('plain-host');
    const t1 = await write(lease, 'plain-host', [{ type: 'message', role: 'user', content: 'hi' }]);
    const refused = await report(lease, 'plain-host', {
      event: 'succeeded',
      attestation: attest(lease, lease.recordHead, t1.address, 'succeeded', key.secretKey),
    });
    expect([refused.status, refused.body.code, (refused.body.details as { reason?: string }).reason]).toEqual(
      [409, 'attestation_mismatch', 'unknown_host'],
    );
    expect((await runOf(lease.runId)).status).toBe('running');
    const sealed = await report(lease, 'plain-host', { event: 'succeeded', outputs: { summary: 'ok' } });
    expect(sealed.status).toBe(200);
    const keys = (await call(t.app, 'GET', '/keys', { key: null })).body.keys as {
      kind: string;
      key: string;
    }[];
    const rec = await call(t.app, 'GET', `/runs/${lease.runId}/record`);
    expect(rec.body.verify).toMatchObject({
      ok: true,
      signedBy: [keys.find((k) => k.kind === 'control-plane')!.key],
    });
  });

  it('a tenant-scoped host is offered only its tenant’s turns; a shared host any tenant’s', async () => {
    const otherAdmin = await t.tenant('hosts-other');
    const minted = await call(t.app, 'POST', '/runners/pairing-tokens', { body: {} }); // tenant default's admin
    const token = String(minted.body.token);
    const paired = await call(t.app, 'POST', '/agents/hosts/pair', {
      key: null,
      body: { token, ...agentHostPairingProof(token), name: 'scoped' },
    });
    expect(paired.status).toBe(201);
    const scoped = paired.body.hostId as string;
    const foreign = await queueTurn(otherAdmin);
    const r = await internal('POST', '/internal/agent/v1/leases', { holder: scoped, free: 5 });
    expect((r.body.leases as Lease[]).map((l) => l.runId)).not.toContain(foreign);
    const { hostId: shared } = await pairHost('shared');
    const s2 = await internal('POST', '/internal/agent/v1/leases', { holder: shared, free: 5 });
    expect((s2.body.leases as Lease[]).map((l) => l.runId)).toContain(foreign);
  });
});
