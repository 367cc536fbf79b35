// OTLP spans naming an agent turn (real core, PGlite, through the real app): a turn's trajectory is the
// transcript its agent host writes — the host numbers its events after the transcript it loaded at its lease,
// a park names the transcript's address (what its resume must offer again) and a paired host's attestation
// commits to it — so spans naming a turn are materialized as an imported trajectory, leased or not
// (trajectory/run-trajectories.ts `outsideWriterOf`). Before, they were appended to the transcript: a host's
// next batch was 409 `event_conflict`, and a parked turn could no longer resume (409 `snapshot_mismatch`).
import { randomBytes } from 'node:crypto';
import { encodeAttestationBody, generateSigningKey, type Hex, signAttestation } from '@everdict/runrecord';
import { canonicalJsonl, digestOf } from '@everdict/trajectory-store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, call, callInternal, type TestApp, testApp } from '../http/testing/harness.js';
import { agentHostPairingProof } from '../http/testing/runners.js';
import { agentTrace, otlpJson } from './otlp-fixtures.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const internal = (method: string, path: string, body?: unknown) => callInternal(t.app, method, path, body);
type Lease = { runId: string; epoch: number; unitId: Hex; grantsId: Hex; recordHead: Hex };
type Event = { seq: number; type: string } & Record<string, unknown>;

async function queueTurn(): Promise<string> {
  const a = await call(t.app, 'POST', '/agents', {
    body: { name: 'traced', model: 'scripted', tools: ['ask_approval'] },
  });
  expect(a.status, JSON.stringify(a.body)).toBe(201);
  const agentId = (a.body.agent as { id: string }).id;
  const conv = await call(t.app, 'POST', '/conversations', { body: { agentId } });
  const convId = (conv.body.group as { id: string }).id;
  const msg = await call(t.app, 'POST', `/conversations/${convId}/messages`, { body: { text: 'hi' } });
  expect(msg.status).toBe(202);
  return (msg.body.run as { id: string }).id;
}

async function leaseTurn(holder: string, runId: string): Promise<Lease> {
  const r = await internal('POST', '/internal/agent/v1/leases', { holder, free: 1 });
  const lease = (r.body.leases as Lease[])[0];
  expect(lease?.runId).toBe(runId);
  return lease!;
}

/** The transcript as the host reads it back (GET …/transcript). */
async function transcript(runId: string): Promise<Event[]> {
  const page = await internal('GET', `/internal/agent/v1/runs/${runId}/transcript?offset=0&limit=1000`);
  expect(page.status).toBe(200);
  return page.body.events as Event[];
}

/** A transcript's address as a host names it (the store's digest of its canonical JSONL). */
async function addressOf(events: readonly Event[]): Promise<{ address: Hex; bytes: number }> {
  const text = canonicalJsonl(events as never);
  return { address: (await digestOf(text)).slice('blake3:'.length) as Hex, bytes: text.length };
}

/** Host-numbered events from `from` on (what apps/agent's Transcript posts). */
const numbered = (runId: string, from: number, contents: [string, string][]): Event[] =>
  contents.map(([role, content], i) => ({
    type: 'message',
    seq: from + i,
    ts: '2026-12-04T10:00:00.000Z',
    runId,
    role,
    content,
  }));

async function exportTrace(traceId: string, runId: string): Promise<void> {
  const res = await call(t.app, 'POST', '/v1/traces', {
    key: ADMIN_KEY,
    body: otlpJson(agentTrace(traceId), { 'everdict.run_id': runId }),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function importedOf(traceId: string): Promise<{ eventCount: number }[]> {
  const listed = await call(t.app, 'GET', `/trajectories?source=otlp&externalId=${traceId}`);
  expect(listed.status).toBe(200);
  return listed.body.items as { eventCount: number }[];
}

describe('OTLP import naming an agent turn', () => {
  it('mid-lease spans do not take the seqs the host numbers next; its signed close verifies its own transcript', async () => {
    const key = generateSigningKey(randomBytes(32));
    const minted = await internal('POST', '/internal/runners/pairing-tokens', {});
    const token = String(minted.body.token);
    const paired = await call(t.app, 'POST', '/agents/hosts/pair', {
      key: null,
      body: { token, ...agentHostPairingProof(token, key), name: 'traced-host' },
    });
    expect(paired.status, JSON.stringify(paired.body)).toBe(201);
    const hostId = paired.body.hostId as string;
    const runId = await queueTurn();
    const lease = await leaseTurn(hostId, runId);
    const held = { holder: hostId, epoch: lease.epoch };

    // The host loads the (empty) transcript and numbers its events after it.
    expect(await transcript(runId)).toEqual([]);
    const first = numbered(runId, 0, [['user', 'hi']]);
    const w1 = await internal('POST', `/internal/agent/v1/runs/${runId}/transcript`, {
      ...held,
      events: first,
    });
    expect(w1.status, JSON.stringify(w1.body)).toBe(202);

    // Spans naming the turn arrive mid-interval: imported, the transcript untouched.
    const traceId = 'd4'.repeat(16);
    await exportTrace(traceId, runId);
    expect((await transcript(runId)).map((e) => e.seq)).toEqual([0]);
    const imported = await importedOf(traceId);
    expect(imported).toHaveLength(1);
    expect(imported[0]!.eventCount).toBeGreaterThan(0);

    // The host's next batch appends at the seq it numbered (before: 409 event_conflict).
    const second = numbered(runId, 1, [['assistant', 'done']]);
    const w2 = await internal('POST', `/internal/agent/v1/runs/${runId}/transcript`, {
      ...held,
      events: second,
    });
    expect(w2.status, JSON.stringify(w2.body)).toBe(202);
    expect(w2.body.eventCount).toBe(2);

    // Its attestation commits to the transcript it wrote: the stored one is exactly that.
    const { address } = await addressOf([...first, ...second]);
    expect((await addressOf(await transcript(runId))).address).toBe(address);
    const { body } = signAttestation(
      {
        unitId: lease.unitId,
        grantsId: lease.grantsId,
        recordHead: lease.recordHead,
        startedMs: 1_000n,
        endedMs: 2_000n,
        activeUj: 2_000_000n,
        provenance: 'estimated',
        meter: 'agent-wallclock-model',
        journalRoot: address,
        outcome: 'succeeded',
        exitCode: 0,
      },
      key.secretKey,
    );
    const done = await internal('POST', '/internal/agent-run-events', {
      runId,
      event: 'succeeded',
      ...held,
      outputs: { summary: 'done' },
      attestation: encodeAttestationBody(body),
    });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body.status).toBe('succeeded');
  });

  it('spans naming a parked turn do not change the transcript its park named: the next host resumes it', async () => {
    const runId = await queueTurn();
    const lease = await leaseTurn('plain-host', runId);
    const held = { holder: 'plain-host', epoch: lease.epoch };
    const asked = await internal('POST', `/internal/agent/v1/runs/${runId}/calls`, {
      ...held,
      callId: 'call_1',
      tool: 'ask_approval',
      input: { question: 'ok?' },
    });
    expect(asked.status).toBe(201);
    const events = numbered(runId, 0, [['user', 'hi']]);
    expect(
      (await internal('POST', `/internal/agent/v1/runs/${runId}/transcript`, { ...held, events })).status,
    ).toBe(202);
    const parkedAs = await addressOf(await transcript(runId));
    const parked = await internal('POST', '/internal/agent-run-events', {
      runId,
      event: 'awaiting_input',
      ...held,
      transcript: parkedAs.address,
      transcriptBytes: parkedAs.bytes,
      manifest: 'c'.repeat(64),
      account: { dispatched: ['call_1'], resolved: [] },
    });
    expect(parked.status, JSON.stringify(parked.body)).toBe(200);
    expect(parked.body.status).toBe('awaiting_input');

    // Parked, no lease: spans naming it are imported all the same.
    const traceId = 'e5'.repeat(16);
    await exportTrace(traceId, runId);
    expect(await importedOf(traceId)).toHaveLength(1);

    // The approval arrives; the next host re-reads the transcript, names it, and resumes with that address
    // (apps/agent's interval: recomputed from what is stored). Before: snapshot_mismatch, for good.
    const answered = await call(t.app, 'POST', `/runs/${runId}/input`, {
      body: { callId: 'call_1', approved: true },
    });
    expect(answered.status).toBe(200);
    const again = await leaseTurn('next-host', runId);
    const offered = await addressOf(await transcript(runId));
    expect(offered.address).toBe(parkedAs.address);
    const resumed = await internal('POST', '/internal/agent-run-events', {
      runId,
      event: 'resumed',
      holder: 'next-host',
      epoch: again.epoch,
      transcript: offered.address,
      manifest: 'c'.repeat(64),
    });
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    expect(resumed.body.status).toBe('running');
  });
});
