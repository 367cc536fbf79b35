// The next leases in a completion batch's answer (`POST /runner/v1/completions` with `next: {free}`): granted
// after the batch settled, as a lease request grants them — up to `free`, never more than the runner's lease
// bound (`leaseBound(slots)` = 2 × slots: its slots executing plus one settling behind each) minus the leases
// it still holds (a refused item's lease still counts), none while it drains — and absent from an answer
// that did not ask.
import { encodeAttestationBody, type Hex } from '@everdict/runrecord';
import { StreamingDigest } from '@everdict/trajectory-store';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ADMIN_KEY, call, type TestApp, testApp } from '../http/testing/harness.js';
import {
  leaseRuns,
  pairTestRunner,
  signTestInterval,
  type TestLease,
  type TestRunner,
} from '../http/testing/runners.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ executors: [] });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

type LeaseBody = TestLease;

/** A paired runner of `slots` slots, and its audit chain's head as the test signs along it. */
class ChainedRunner {
  head: Hex | undefined;
  constructor(readonly runner: TestRunner) {}

  get credential(): string {
    return this.runner.credential;
  }

  get id(): string {
    return this.runner.id;
  }

  static async pair(name: string, slots: number): Promise<ChainedRunner> {
    const capabilities = { drivers: ['process'], kinds: ['command'], images: ['default'], slots };
    return new ChainedRunner(await pairTestRunner(t.app, { name, capabilities }));
  }

  lease(free: number): Promise<LeaseBody[]> {
    return leaseRuns(t.app, this.runner, free);
  }

  /** One completion item, signed as the next link of this runner's chain (`journalRoot` wrong: refused). */
  item(l: LeaseBody, { advance = true, wrongRoot = false } = {}) {
    const signed = signTestInterval(l, this.runner.key.secretKey, {
      ...(wrongRoot ? { journalRoot: 'f'.repeat(64) as Hex } : {}),
      ...(this.head ? { auditPrev: this.head } : {}),
    });
    if (advance) this.head = signed.address;
    return { runId: l.runId, epoch: l.epoch, outputs: {}, attestation: encodeAttestationBody(signed.body) };
  }

  complete(items: unknown[], next?: { free: number }) {
    return call(t.app, 'POST', '/runner/v1/completions', {
      key: this.credential,
      body: { items, ...(next ? { next } : {}) },
    });
  }
}

async function createRuns(n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await call(t.app, 'POST', '/runs', {
      key: ADMIN_KEY,
      body: { kind: 'command', subject: { command: ['true'] } },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    ids.push(String((r.body.run as { id: string }).id));
  }
  return ids;
}

const statusOf = async (runId: string) =>
  (await call(t.app, 'GET', `/runs/${runId}`, { key: ADMIN_KEY })).body.status;

describe('the next leases with a completion batch', { timeout: 300_000 }, () => {
  it('grants up to `free` after the batch settled, capped by the lease bound the held leases leave', async () => {
    const r = await ChainedRunner.pair('next-a', 1);
    const ids = await createRuns(5);
    const first = await r.lease(1);
    expect(first.map((l) => l.runId)).toEqual(ids.slice(0, 1));

    // It settles; the slot's next two leases (the bound of one slot: 2) come back in the same answer.
    const done = await r.complete([r.item(first[0]!)], { free: 2 });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect((done.body.results as { outcome: string }[]).map((x) => x.outcome)).toEqual(['settled']);
    const next = done.body.leases as LeaseBody[];
    expect(next.map((l) => [l.runId, l.epoch])).toEqual([
      [ids[1], 1],
      [ids[2], 1],
    ]);
    expect(await statusOf(ids[1]!)).toBe('running');

    // Asking for more than the bound leaves: one settles, one lease is still held → one lease.
    const more = await r.complete([r.item(next[0]!)], { free: 5 });
    expect(more.status).toBe(200);
    expect((more.body.leases as LeaseBody[]).map((l) => l.runId)).toEqual([ids[3]]);

    // Without `next` the answer carries no leases (and grants none).
    const held = more.body.leases as LeaseBody[];
    const plain = await r.complete([r.item(next[1]!), r.item(held[0]!)]);
    expect(plain.status).toBe(200);
    expect(plain.body.leases).toBeUndefined();
    // (The queue is left empty for the next test.)
    const [last] = await r.lease(1);
    expect(last?.runId).toBe(ids[4]);
    expect((await r.complete([r.item(last!)])).status).toBe(200);
  });

  it('a lease request grants up to 2 × slots held — its slots executing and the ones settling — and no more', async () => {
    const r = await ChainedRunner.pair('next-bound', 2);
    const ids = await createRuns(6);
    // Asked for more than the bound: four (2 × 2 slots), in order.
    const leased = await r.lease(10);
    expect(leased.map((l) => l.runId)).toEqual(ids.slice(0, 4));
    // At the bound: nothing more, however much is asked.
    expect(await r.lease(3)).toEqual([]);
    expect(await statusOf(ids[4]!)).toBe('queued');
    // One settles: one lease room, one lease (by a lease request, and by a batch's next leases alike).
    expect((await r.complete([r.item(leased[0]!)])).status).toBe(200);
    const one = await r.lease(3);
    expect(one.map((l) => l.runId)).toEqual([ids[4]]);
    const batch = await r.complete([r.item(leased[1]!)], { free: 3 });
    const two = batch.body.leases as LeaseBody[];
    expect(two.map((l) => l.runId)).toEqual([ids[5]]);
    // (Everything settles: the queue is left empty for the next test.)
    const rest = [leased[2]!, leased[3]!, one[0]!, two[0]!];
    expect((await r.complete(rest.map((l) => r.item(l)))).status).toBe(200);
  });

  it("a refused item's lease still counts: nothing is granted into its slot", async () => {
    const r = await ChainedRunner.pair('next-b', 1);
    const [queued, waiting] = await createRuns(2);
    const [l] = await r.lease(1);
    expect(l?.runId).toBe(queued);
    const refused = await r.complete([r.item(l!, { advance: false, wrongRoot: true })], { free: 1 });
    expect(refused.status).toBe(200);
    expect((refused.body.results as { outcome: string }[])[0]?.outcome).toBe('refused');
    expect(refused.body.leases).toEqual([]);
    expect(await statusOf(waiting!)).toBe('queued');
    // Settled properly, its slot goes to the waiting run.
    const ok = await r.complete([r.item(l!)], { free: 1 });
    expect((ok.body.leases as LeaseBody[]).map((x) => x.runId)).toEqual([waiting]);
    const last = await r.complete([r.item((ok.body.leases as LeaseBody[])[0]!)], { free: 1 });
    expect(last.body.leases).toEqual([]);
  });

  it('a batch that did not settle whole is granted nothing, even into the slots its settled items freed', async () => {
    // The runner asked counting every item's slot as freed (a batch sent behind another may be refused
    // whole, its leases still held): a grant on a partly settled batch could exceed its slots.
    const r = await ChainedRunner.pair('next-e', 2);
    const [a, b, waiting] = await createRuns(3);
    const leased = await r.lease(2);
    expect(leased.map((l) => l.runId)).toEqual([a, b]);
    const partly = await r.complete(
      [r.item(leased[0]!), r.item(leased[1]!, { advance: false, wrongRoot: true })],
      { free: 2 },
    );
    expect(partly.status).toBe(200);
    expect((partly.body.results as { outcome: string }[]).map((x) => x.outcome)).toEqual([
      'settled',
      'refused',
    ]);
    expect(partly.body.leases).toEqual([]);
    expect(await statusOf(waiting!)).toBe('queued');
    // Settled whole, the batch is granted into its slots (and the queue is left empty for the next test).
    const whole = await r.complete([r.item(leased[1]!)], { free: 2 });
    expect((whole.body.leases as LeaseBody[]).map((x) => x.runId)).toEqual([waiting]);
    const last = await r.complete([r.item((whole.body.leases as LeaseBody[])[0]!)]);
    expect(last.status).toBe(200);
  });

  it("a batch's journal roots reuse one digest (no WebAssembly instance per completion)", async () => {
    const r = await ChainedRunner.pair('next-f', 3);
    await createRuns(3);
    const leased = await r.lease(3);
    expect(leased).toHaveLength(3);
    const create = vi.spyOn(StreamingDigest, 'create');
    try {
      const done = await r.complete(leased.map((l) => r.item(l)));
      expect((done.body.results as { outcome: string }[]).map((x) => x.outcome)).toEqual([
        'settled',
        'settled',
        'settled',
      ]);
      // At most the first item makes one (none when an earlier completion left a spare).
      expect(create.mock.calls.length).toBeLessThanOrEqual(1);
    } finally {
      create.mockRestore();
    }
  });

  it('a draining runner is granted nothing with its completions', async () => {
    const r = await ChainedRunner.pair('next-c', 2);
    const [a, b] = await createRuns(2);
    const [l] = await r.lease(1);
    expect(l?.runId).toBe(a);
    const drained = await call(t.app, 'POST', `/runners/${r.id}/drain`, { key: ADMIN_KEY });
    expect(drained.status).toBe(200);
    const done = await r.complete([r.item(l!)], { free: 2 });
    expect((done.body.results as { outcome: string }[])[0]?.outcome).toBe('settled');
    expect(done.body.leases).toEqual([]);
    expect(await statusOf(b!)).toBe('queued');
    // (Another runner takes it, so the queue is empty for whatever runs next.)
    const other = await ChainedRunner.pair('next-d', 1);
    const [lb] = await other.lease(1);
    expect(lb?.runId).toBe(b);
    expect((await other.complete([other.item(lb!)])).status).toBe(200);
  });
});
