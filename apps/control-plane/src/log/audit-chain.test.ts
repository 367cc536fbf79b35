// The runner key's audit chain on the real core: each completion's attestation must name the runner's
// previous one in `audit_prev` (a wrong or — once linked — missing link is 409 attestation_mismatch and
// changes nothing); `GET /runners/:id/audit` serves the chain, which the BUILT `everdict-runrecord
// verify-audit` accepts — and refuses with `AuditChainBroken` once an interval is deleted from it.
import { encodeAttestationBody, type Hex, verifyAuditChain, verifyWire } from '@everdict/runrecord';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type TestApp, testApp } from '../http/testing/harness.js';
import { leaseRuns, pairTestRunner, signTestInterval, type TestLease } from '../http/testing/runners.js';
import { DISPATCH_CHANNEL, RELEASED_PAYLOAD, RUNNERS_ONLY_NOTE } from '../services/context.js';
import { runrecord } from './testing/served.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ executors: [], headLog: { loop: false } });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

type LeaseBody = TestLease;

describe('the runner audit chain', { timeout: 300_000 }, () => {
  it('links every completion to the one before; the served chain verifies; a deleted interval breaks it', async () => {
    const runner = await pairTestRunner(t.app, { name: 'audited' });
    const key = runner.key;
    for (let i = 0; i < 3; i++) {
      const r = await call(t.app, 'POST', '/runs', {
        body: { kind: 'command', subject: { command: ['true'] } },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
    const leases = await leaseRuns(t.app, runner, 3);
    expect(leases).toHaveLength(3);
    const sign = (l: LeaseBody, auditPrev?: Hex) =>
      signTestInterval(l, key.secretKey, auditPrev ? { auditPrev } : {});
    const complete = (l: LeaseBody, body: ReturnType<typeof sign>['body']) =>
      call(t.app, 'POST', `/runner/v1/runs/${l.runId}/complete`, {
        key: runner.credential,
        body: { epoch: l.epoch, outputs: {}, attestation: encodeAttestationBody(body) },
      });
    const [l1, l2, l3] = leases as [LeaseBody, LeaseBody, LeaseBody];

    const a = sign(l1); // the chain's first link names none
    expect((await complete(l1, a.body)).status).toBe(200);
    const wrong = await complete(l2, sign(l2, l3.recordHead).body);
    expect(wrong.status).toBe(409);
    expect(wrong.body.code).toBe('attestation_mismatch');
    expect((await call(t.app, 'GET', `/runs/${l2.runId}`)).body.status).toBe('running');
    const b = sign(l2, a.address);
    expect((await complete(l2, b.body)).status).toBe(200);
    // Linked now: an attestation that names no previous one is refused like a wrong link.
    const unlinked = await complete(l3, sign(l3).body);
    expect(unlinked.status).toBe(409);
    expect(unlinked.body.details).toMatchObject({ expected: b.address });
    const c = sign(l3, b.address);
    expect((await complete(l3, c.body)).status).toBe(200);

    // The record carries the link in its bundle and still verifies with the runner's key.
    const wire = (await call(t.app, 'GET', `/runs/${l3.runId}/record?view=wire`)).body as {
      attestations: Record<string, { audit_prev?: string }>;
    };
    expect(wire.attestations[c.address]?.audit_prev).toBe(b.address);
    expect(verifyWire(JSON.parse(JSON.stringify(wire)), { trustKeys: [key.publicKey] }).ok).toBe(true);

    const chain = await call(t.app, 'GET', `/runners/${runner.id}/audit`);
    expect(chain.status).toBe(200);
    expect((chain.body.links as { address: string }[]).map((l) => l.address)).toEqual([
      a.address,
      b.address,
      c.address,
    ]);
    expect(verifyAuditChain(chain.body, { key: key.publicKey })).toEqual({
      ok: true,
      length: 3,
      head: c.address,
      from: null,
    });
    const cli = await runrecord(['verify-audit', '--key', key.publicKey], JSON.stringify(chain.body));
    expect(cli.code, cli.err).toBe(0);
    expect(cli.json).toEqual({ ok: true, length: 3, head: c.address, from: null });
    const other = await runrecord(['verify-audit', '--key', 'ab'.repeat(32)], JSON.stringify(chain.body));
    expect(other.json).toMatchObject({ ok: false, error: 'UntrustedAttestation' });
    // Another tenant does not see the runner.
    const stranger = await t.tenant('audit-stranger');
    expect((await call(t.app, 'GET', `/runners/${runner.id}/audit`, { key: stranger })).status).toBe(404);

    // The operator deletes the middle interval from the runner's history: the chain no longer links.
    await sql`DELETE FROM runner_audit WHERE runner_id = ${runner.id} AND seq = 1`.execute(
      t.core.internals.ldb.db,
    );
    const cut = await call(t.app, 'GET', `/runners/${runner.id}/audit`);
    const broken = await runrecord(['verify-audit', '--key', key.publicKey], JSON.stringify(cut.body));
    expect(broken.code).toBe(1);
    expect(broken.json).toEqual({ ok: false, error: 'AuditChainBroken', index: 1 });
  });

  it('POST /runner/v1/completions settles in chain order; the first refusal skips the rest, untouched', async () => {
    const runner = await pairTestRunner(t.app, { name: 'batched' });
    const { key, credential } = runner;
    for (let i = 0; i < 4; i++) {
      const r = await call(t.app, 'POST', '/runs', {
        body: { kind: 'command', subject: { command: ['true'] } },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
    const [l1, l2, l3, l4] = (await leaseRuns(t.app, runner, 4)) as [
      LeaseBody,
      LeaseBody,
      LeaseBody,
      LeaseBody,
    ];
    // activeUj: not the first test's bodies (an address names the body, whoever signed it).
    const sign = (l: LeaseBody, auditPrev?: Hex) =>
      signTestInterval(l, key.secretKey, { activeUj: 2_000n, ...(auditPrev ? { auditPrev } : {}) });
    const item = (l: LeaseBody, signed: ReturnType<typeof sign>, epoch = l.epoch) => ({
      runId: l.runId,
      epoch,
      outputs: {},
      attestation: encodeAttestationBody(signed.body),
    });
    const status = async (l: LeaseBody) => (await call(t.app, 'GET', `/runs/${l.runId}`)).body.status;
    const a = sign(l1);
    const b = sign(l2, a.address);
    const c = sign(l3, b.address);
    // l2 is sent under an epoch it does not hold: settled, refused, skipped.
    const first = await call(t.app, 'POST', '/runner/v1/completions', {
      key: credential,
      body: { items: [item(l1, a), item(l2, b, 2), item(l3, c)] },
    });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const results = first.body.results as {
      runId: string;
      status: number;
      outcome: string;
      problem?: { code: string };
      run?: { status: string };
    }[];
    expect(results.map((r) => [r.runId, r.status, r.outcome])).toEqual([
      [l1.runId, 200, 'settled'],
      [l2.runId, 409, 'refused'],
      [l3.runId, 409, 'skipped'],
    ]);
    expect(results[0]!.run?.status).toBe('succeeded');
    expect(results[1]!.problem?.code).toBe('stale_lease');
    expect([await status(l1), await status(l2), await status(l3)]).toEqual([
      'succeeded',
      'running',
      'running',
    ]);
    // Signed again after the last accepted link, the rest settle in one call.
    const b2 = sign(l2, a.address);
    const c2 = sign(l3, b2.address);
    const d = sign(l4, c2.address);
    const second = await call(t.app, 'POST', '/runner/v1/completions', {
      key: credential,
      body: { items: [item(l2, b2), item(l3, c2), item(l4, d)] },
    });
    expect((second.body.results as { outcome: string }[]).map((r) => r.outcome)).toEqual([
      'settled',
      'settled',
      'settled',
    ]);
    // A batch of distinct runs writes its items at once (AttestedWrites) and settles their admission slots in
    // one statement (settleSlots): each answer is the written run, each slot is settled with it.
    expect((second.body.results as { run?: { status: string } }[]).map((r) => r.run?.status)).toEqual([
      'succeeded',
      'succeeded',
      'succeeded',
    ]);
    const slots = await t.core.internals.ldb.db
      .selectFrom('adm_slots')
      .select(['run_id', 'status'])
      .where('run_id', 'in', [l2.runId, l3.runId, l4.runId])
      .orderBy('run_id')
      .execute();
    expect(slots.map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    // The batch read its runs, leases and records once (completion.ts prefetchBatch) and inserted its events
    // once: each record verifies with the runner's key, each run has its one terminal event.
    for (const [l, s] of [
      [l2, b2],
      [l3, c2],
      [l4, d],
    ] as const) {
      const wire = (await call(t.app, 'GET', `/runs/${l.runId}/record?view=wire`)).body as {
        segments: { kind: string }[];
        attestations: Record<string, unknown>;
      };
      expect(Object.keys(wire.attestations)).toEqual([s.address]);
      expect(verifyWire(JSON.parse(JSON.stringify(wire)), { trustKeys: [key.publicKey] }).ok).toBe(true);
    }
    const terminal = await t.core.internals.ldb.db
      .selectFrom('events')
      .select('run_id')
      .where('kind', '=', 'run.settled')
      .where('run_id', 'in', [l2.runId, l3.runId, l4.runId])
      .execute();
    expect(terminal.map((e) => e.run_id).sort()).toEqual([l2.runId, l3.runId, l4.runId].sort());
    // The attestation, the segments and the run update went in one statement: the head log's trigger on
    // record_segments still queued each run's new head (its loop is off here: the rows wait in log_pending).
    const ids = [l2.runId, l3.runId, l4.runId];
    const { rows: heads } = await sql<{ run_id: string }>`
      SELECT r.id AS run_id FROM log_pending p, jsonb_array_elements(p.leaves) x, runs r
      WHERE r.id = x->>'r' AND r.id = ANY(${ids}::text[])
        AND (x->>'l')::int = r.record_length AND x->>'h' = r.record_head`.execute(t.core.internals.ldb.db);
    expect(heads.map((h) => h.run_id).sort()).toEqual([...ids].sort());
    // The same batch again, one item twice: settle is idempotent, nothing written twice.
    const again = await call(t.app, 'POST', '/runner/v1/completions', {
      key: credential,
      body: { items: [item(l2, b2), item(l3, c2), item(l3, c2), item(l4, d)] },
    });
    expect((again.body.results as { outcome: string }[]).map((r) => r.outcome)).toEqual([
      'settled',
      'settled',
      'settled',
      'settled',
    ]);
    const stored = await t.core.internals.ldb.db
      .selectFrom('attestations')
      .select('run_id')
      .where('run_id', 'in', [l2.runId, l3.runId, l4.runId])
      .execute();
    expect(stored).toHaveLength(3);
    const chain = await call(t.app, 'GET', `/runners/${runner.id}/audit`);
    expect((chain.body.links as { address: string }[]).map((l) => l.address)).toEqual([
      a.address,
      b2.address,
      c2.address,
      d.address,
    ]);
    expect(verifyAuditChain(chain.body, { key: key.publicKey })).toEqual({
      ok: true,
      length: 4,
      head: d.address,
      from: null,
    });
    // One transaction settles a batch: a refusal after items that wrote (here a link naming the wrong
    // audit_prev, found once two links went in) rolls it back, and the items before it are settled again.
    for (let i = 0; i < 3; i++) {
      const r = await call(t.app, 'POST', '/runs', {
        body: { kind: 'command', subject: { command: ['true'] } },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
    const [m1, m2, m3] = (await leaseRuns(t.app, runner, 3)) as [LeaseBody, LeaseBody, LeaseBody];
    const e1 = sign(m1, d.address);
    const e2 = sign(m2, e1.address);
    const e3 = sign(m3, e1.address); // not the link before it
    const third = await call(t.app, 'POST', '/runner/v1/completions', {
      key: credential,
      body: { items: [item(m1, e1), item(m2, e2), item(m3, e3)] },
    });
    const thirdResults = third.body.results as { outcome: string; problem?: { code: string } }[];
    expect(thirdResults.map((r) => r.outcome)).toEqual(['settled', 'settled', 'refused']);
    expect(thirdResults[2]!.problem?.code).toBe('attestation_mismatch');
    expect([await status(m1), await status(m2), await status(m3)]).toEqual([
      'succeeded',
      'succeeded',
      'running',
    ]);
    const longer = await call(t.app, 'GET', `/runners/${runner.id}/audit`);
    expect((longer.body.links as { address: string }[]).map((l) => l.address).slice(-3)).toEqual([
      d.address,
      e1.address,
      e2.address,
    ]);
    const records = await t.core.internals.ldb.db
      .selectFrom('attestations')
      .select('run_id')
      .where('run_id', 'in', [m1.runId, m2.runId, m3.runId])
      .execute();
    expect(records.map((r) => r.run_id).sort()).toEqual([m1.runId, m2.runId].sort());
    // An empty or oversized batch, or a malformed item, is refused whole (400), nothing settled.
    const empty = await call(t.app, 'POST', '/runner/v1/completions', {
      key: credential,
      body: { items: [] },
    });
    expect(empty.status).toBe(400);
    expect(empty.body.code).toBe('validation_failed');
  });
});

describe('a runner completion releases capacity', { timeout: 300_000 }, () => {
  it('announces the release wake when a queued run waits on the tenant (one write statement settles it)', async () => {
    const w = await testApp({ executors: [], headLog: { loop: false }, policy: { maxConcurrent: 1 } });
    try {
      const runner = await pairTestRunner(w.app, { name: 'waking' });
      const { key, credential } = runner;
      for (let i = 0; i < 2; i++)
        await call(w.app, 'POST', '/runs', { body: { kind: 'command', subject: { command: ['true'] } } });
      const leases = await leaseRuns(w.app, runner, 2);
      expect(leases).toHaveLength(1); // maxConcurrent 1: the second run waits
      const [l] = leases as [LeaseBody];
      const signed = signTestInterval(l, key.secretKey, { endedMs: 1_764_547_200_500n, activeUj: 3_000n });
      // The payloads heard on the dispatch channel, up to a marker NOTIFYed after the completion committed.
      const heard: string[] = [];
      let marked: () => void = () => undefined;
      const marker = new Promise<void>((r) => {
        marked = r;
      });
      const ldb = w.core.internals.ldb;
      const unlisten = await ldb.listen(DISPATCH_CHANNEL, (payload) => {
        if (payload === 'marker') marked();
        else heard.push(payload);
      });
      try {
        const done = await call(w.app, 'POST', '/runner/v1/completions', {
          key: credential,
          body: {
            items: [
              {
                runId: l.runId,
                epoch: l.epoch,
                outputs: {},
                attestation: encodeAttestationBody(signed.body),
              },
            ],
          },
        });
        expect((done.body.results as { outcome: string }[])[0]?.outcome).toBe('settled');
        await ldb.notify(DISPATCH_CHANNEL, 'marker');
        await marker;
      } finally {
        await unlisten();
      }
      // Only command runs are queued: the runners' long-polls are woken, not the inline dispatch loops.
      expect(heard).toContain(`${RELEASED_PAYLOAD}${RUNNERS_ONLY_NOTE}`);
    } finally {
      await w.close();
    }
  });
});
