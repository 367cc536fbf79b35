// An agent host's leased report and transcript append racing its revoke, on two connections at once
// (agents/hosts.ts: they serialize on the host's row — a report or an append holds it FOR SHARE from its lease
// check to its commit, the revoke locks it FOR UPDATE before it expires the host's leases). A report past its
// lease check when the revoke comes settles first, and the revoke then finds no lease of it to end; one
// arriving while the revoke is in flight is 401 `invalid_agent_host` once it commits. A transcript append
// checks its lease in the transcript writer's transaction: before, it checked in a transaction of its own and
// wrote after, so a batch checked before the revoke landed after it (its turn already requeued for another
// host). A third connection holds a row or lock one side needs next, so each pause is a lock wait (watched in
// pg_stat_activity), never a sleep. Live PostgreSQL only (PGlite has one connection).
import { randomBytes } from 'node:crypto';
import {
  encodeAttestationBody,
  generateSigningKey,
  type Hex,
  type SigningKey,
  signAttestation,
} from '@everdict/runrecord';
import { canonicalJsonl, digestOf } from '@everdict/trajectory-store';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { revokeAgentHost } from '../src/agents/hosts.js';
import { ADMIN_KEY, call, callInternal } from '../src/http/testing/harness.js';
import { agentHostPairingProof } from '../src/http/testing/runners.js';
import { leasePolicy } from '../src/leases/policy.js';
import { expireHolder, requeueExpired } from '../src/runners/leases.js';
import { announceSkippedLiveSuite, LIVE_PG } from './db.js';
import { type LockRace, lockRace } from './lock-waits.js';
import type { RunnerApp } from './runner-app.js';

announceSkippedLiveSuite('test/agent-host-revoke.pg.test.ts');

type Lease = { runId: string; epoch: number; unitId: Hex; grantsId: Hex; recordHead: Hex };
type Event = Record<string, unknown>;

describe.runIf(LIVE_PG)('an agent host’s report or append racing its revoke', () => {
  let t: RunnerApp;
  let race: LockRace;
  let locker: pg.Client;

  beforeAll(async () => {
    race = await lockRace();
    ({ t, locker } = race);
  }, 120_000);

  // A turn left queued is cancelled: the next test's host is offered only its own.
  const turns: string[] = [];
  afterEach(async () => {
    for (const runId of turns.splice(0))
      await call(t.app, 'POST', `/runs/${runId}/cancel`, { key: ADMIN_KEY, body: {} });
  });

  afterAll(() => race?.close());

  const internal = (method: string, path: string, body?: unknown) => callInternal(t.app, method, path, body);

  const waiting = (n: number, done?: () => boolean) => race.waiting(n, done);

  /** A paired host holding the lease of one new turn, whose transcript holds one message. */
  async function leased(): Promise<{ hostId: string; key: SigningKey; lease: Lease; events: Event[] }> {
    const key = generateSigningKey(randomBytes(32));
    // Its token minted by tenant default's admin: a tenant-scoped host, which that admin may revoke.
    const minted = await call(t.app, 'POST', '/runners/pairing-tokens', { key: ADMIN_KEY, body: {} });
    expect(minted.status, JSON.stringify(minted.body)).toBe(201);
    const token = String(minted.body.token);
    const paired = await call(t.app, 'POST', '/agents/hosts/pair', {
      key: null,
      body: { token, ...agentHostPairingProof(token, key), name: 'racing' },
    });
    expect(paired.status, JSON.stringify(paired.body)).toBe(201);
    const hostId = paired.body.hostId as string;
    const a = await call(t.app, 'POST', '/agents', {
      key: ADMIN_KEY,
      body: { name: 'racer', model: 'scripted', tools: [] },
    });
    const agentId = (a.body.agent as { id: string }).id;
    const conv = await call(t.app, 'POST', '/conversations', { key: ADMIN_KEY, body: { agentId } });
    const convId = (conv.body.group as { id: string }).id;
    const msg = await call(t.app, 'POST', `/conversations/${convId}/messages`, {
      key: ADMIN_KEY,
      body: { text: 'hi' },
    });
    expect(msg.status).toBe(202);
    const runId = (msg.body.run as { id: string }).id;
    turns.push(runId);
    const got = await internal('POST', '/internal/agent/v1/leases', { holder: hostId, free: 1 });
    const lease = (got.body.leases as Lease[])[0]!;
    expect(lease.runId).toBe(runId);
    const events = [message(runId, 0, 'user', 'hi')];
    const w = await append(hostId, lease, events);
    expect(w.status, JSON.stringify(w.body)).toBe(202);
    return { hostId, key, lease, events };
  }

  const message = (runId: string, seq: number, role: string, content: string): Event => ({
    type: 'message',
    seq,
    ts: '2026-12-04T10:00:00.000Z',
    runId,
    role,
    content,
  });

  const append = (hostId: string, lease: Lease, events: Event[]) =>
    internal('POST', `/internal/agent/v1/runs/${lease.runId}/transcript`, {
      holder: hostId,
      epoch: lease.epoch,
      events,
    });

  /** The host's `succeeded` report, signed over `events` (the transcript as it wrote it). */
  async function succeed(hostId: string, key: SigningKey, lease: Lease, events: Event[]) {
    const journalRoot = (await digestOf(canonicalJsonl(events as never))).slice('blake3:'.length) as Hex;
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
        journalRoot,
        outcome: 'succeeded',
        exitCode: 0,
      },
      key.secretKey,
    );
    const r = await internal('POST', '/internal/agent-run-events', {
      runId: lease.runId,
      event: 'succeeded',
      holder: hostId,
      epoch: lease.epoch,
      outputs: { summary: 'done' },
      attestation: encodeAttestationBody(body),
    });
    return r.status === 200 ? 'settled' : String(r.body.code);
  }

  /** The revoke's transaction (agents/hosts.ts): the leases it expired; the sweep that requeues them is `requeue`. */
  const revoke = async (hostId: string) =>
    revokeAgentHost(
      t.core.internals.deps,
      await t.core.services.auth.authenticate(ADMIN_KEY),
      hostId,
      expireHolder,
    );
  const requeue = (expired: readonly string[]) =>
    requeueExpired(t.core.internals.deps, leasePolicy(), expired);

  const statusOf = async (runId: string) => String((await call(t.app, 'GET', `/runs/${runId}`)).body.status);

  it('a report past its lease check when the revoke comes settles first; the revoke ends nothing of it', async () => {
    const { hostId, key, lease, events } = await leased();
    // The lease row held: the report waits at its release of it — after it checked its lease and its host.
    await locker.query('BEGIN');
    try {
      await locker.query('SELECT 1 FROM run_leases WHERE run_id = $1 FOR SHARE', [lease.runId]);
      const reporting = succeed(hostId, key, lease, events);
      await waiting(1);
      let revoked = false;
      const revoking = revoke(hostId).finally(() => {
        revoked = true;
      });
      // The revoke waits for the report (the host's row, FOR SHARE), or — were it not held — commits here.
      await waiting(2, () => revoked);
      expect(revoked).toBe(false);
      await locker.query('ROLLBACK');
      const [outcome, { expired }] = await Promise.all([reporting, revoking]);
      expect(outcome).toBe('settled');
      expect(expired).toEqual([]);
      expect(await statusOf(lease.runId)).toBe('succeeded');
    } finally {
      await locker.query('ROLLBACK').catch(() => {});
    }
  }, 60_000);

  it('a report arriving while the revoke is in flight is 401 once it commits; the turn requeues', async () => {
    const { hostId, key, lease, events } = await leased();
    // The lease row held: the revoke waits there, after it locked and revoked the host's row.
    await locker.query('BEGIN');
    try {
      await locker.query('SELECT 1 FROM run_leases WHERE run_id = $1 FOR SHARE', [lease.runId]);
      const revoking = revoke(hostId);
      await waiting(1);
      // It waits for the revoke (the host's row) and then reads the host revoked.
      const reporting = succeed(hostId, key, lease, events);
      await waiting(2);
      await locker.query('COMMIT');
      const [{ expired }, outcome] = await Promise.all([revoking, reporting]);
      expect(outcome).toBe('invalid_agent_host');
      expect(expired).toEqual([lease.runId]);
      expect(await statusOf(lease.runId)).toBe('running');
      expect(await requeue(expired)).toEqual([lease.runId]);
      expect(await statusOf(lease.runId)).toBe('queued');
    } finally {
      await locker.query('ROLLBACK').catch(() => {});
    }
  }, 60_000);

  it('a transcript append in flight when the revoke commits is 401: nothing lands after the revoke', async () => {
    const { hostId, lease } = await leased();
    // The turn's transcript writer lock (trajectory/run-lock.ts), held: the append waits for it.
    const lockKey = JSON.stringify(['default', lease.runId]);
    const lock = [0x7472616a, lockKey];
    await locker.query('SELECT pg_advisory_lock($1::int, hashtext($2))', lock);
    let held = true;
    try {
      const appending = append(hostId, lease, [message(lease.runId, 1, 'assistant', 'late')]);
      await waiting(1);
      // The revoke commits meanwhile and the turn is requeued for another host.
      const { expired } = await revoke(hostId);
      expect(expired).toEqual([lease.runId]);
      expect(await requeue(expired)).toEqual([lease.runId]);
      await locker.query('SELECT pg_advisory_unlock($1::int, hashtext($2))', lock);
      held = false;
      // Before: its lease was checked (and its transaction committed) before the revoke; it wrote after it.
      const r = await appending;
      expect([r.status, r.body.code]).toEqual([401, 'invalid_agent_host']);
      const page = await t.core.trajectories!.store.read('default', lease.runId, { offset: 0, limit: 100 });
      expect(page.items.map((e) => e.seq)).toEqual([0]);
      expect(await statusOf(lease.runId)).toBe('queued');
    } finally {
      if (held) await locker.query('SELECT pg_advisory_unlock($1::int, hashtext($2))', lock).catch(() => {});
    }
  }, 60_000);
});
