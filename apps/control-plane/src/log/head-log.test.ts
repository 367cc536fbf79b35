// The head log inside the real control plane (PGlite core, scheduler on): every committed segment — the
// single-run paths and the batch settle statement alike — becomes one leaf, sequenced with dense indexes;
// the routes answer headlog's wire contract over real HTTP, every proof verifies with headlog's own
// verifier against a MemoryTree recomputed from the served leaves; cosignatures only from configured keys.
import {
  bytesToHex,
  cosignatureAcceptedWire,
  cosignedTreeHeadWire,
  cosignTreeHead,
  decodeLeaf,
  generateKeyPair,
  groupProofWire,
  idHash,
  inclusionProofWire,
  loggedLeavesWire,
  logKeyWire,
  MemoryTree,
  parseTreeHeadJson,
  runLogCommand,
  treeHeadToJson,
  verifyTreeHead,
} from '@everdict/headlog';
import { type KyselyPlugin, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, until } from '../http/testing/harness.js';
import { HeadLog } from './head-log.js';
import { latestTreeHead, pendingLeaves, readForPass, treeSize } from './store.js';
import { finishedGroup, finishedRun, type ServedLog, sequenceAll, servedLog } from './testing/served.js';

let s: ServedLog;
beforeAll(async () => {
  s = await servedLog();
}, 300_000);
afterAll(async () => {
  await s?.close();
});

async function get(path: string, key: string | null = ADMIN_KEY) {
  const res = await fetch(`${s.url}${path}`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
  return {
    status: res.status,
    type: res.headers.get('content-type') ?? '',
    body: (await res.json()) as unknown,
  };
}

async function segmentCount(): Promise<number> {
  const db = s.t.core.internals.ldb.db;
  const { rows } = await sql<{ n: unknown }>`SELECT count(*) AS n FROM record_segments`.execute(db);
  return Number(rows[0]!.n);
}

describe('the head log in the control plane', { timeout: 300_000 }, () => {
  it('logs every committed segment once, in dense index order, and the leaves name the record heads', async () => {
    const runId = await finishedRun(s.t);
    const group = await finishedGroup(s.t, 3);
    const size = await sequenceAll(s.log);
    expect(size).toBe(await segmentCount());
    const db = s.t.core.internals.ldb.db;
    const { rows } = await sql<{ idx: unknown; leaf: string; run_id: string }>`
      SELECT idx, encode(leaf, 'hex') AS leaf, run_id FROM log_leaves ORDER BY idx`.execute(db);
    expect(rows.map((r) => Number(r.idx))).toEqual([...Array(size).keys()]);
    const { rows: pending } = await sql`SELECT 1 FROM log_pending`.execute(db);
    expect(pending).toEqual([]);
    // Level-0 and level-1 nodes are computed from log_leaves: none is written to log_nodes (0024; level 1 since
    // the store's STORED_FROM_LEVEL), while the higher ones a tree of this size completes are.
    const { rows: low } = await sql`SELECT 1 FROM log_nodes WHERE level < 2`.execute(db);
    expect(low).toEqual([]);
    const { rows: high } = await sql<{ n: unknown }>`SELECT count(*) AS n FROM log_nodes`.execute(db);
    let completed = 0; // perfect subtrees of levels ≥ 2 in a tree of `size` leaves
    for (let l = 2; 2 ** l <= size; l++) completed += Math.floor(size / 2 ** l);
    expect(size).toBeGreaterThanOrEqual(4);
    expect(Number(high[0]!.n)).toBe(completed);
    // Every segment's head is a leaf of its run at its length.
    const { rows: segs } = await sql<{ run_id: string; idx: number; head: string; tenant_id: string }>`
      SELECT run_id, idx, head, tenant_id FROM record_segments`.execute(db);
    const leaves = rows.map((r) => decodeLeaf(Uint8Array.from(Buffer.from(r.leaf, 'hex'))));
    for (const seg of segs) {
      const match = leaves.filter(
        (l) => l.runHash === idHash(seg.run_id) && l.length === seg.idx + 1 && l.head === seg.head,
      );
      expect(match, `${seg.run_id}#${seg.idx}`).toHaveLength(1);
      expect(match[0]!.tenantHash).toBe(idHash(seg.tenant_id));
    }
    const grouped = leaves.filter((l) => l.groupHash === idHash(group.id));
    expect(new Set(grouped.map((l) => l.runHash))).toEqual(new Set(group.runs.map(idHash)));
    expect(leaves.find((l) => l.runHash === idHash(runId))?.groupHash).toBeNull();
  });

  it('serves the wire contract: key, STH, proofs that verify against the recomputed tree', async () => {
    const before = await sequenceAll(s.log);
    await finishedRun(s.t);
    const size = await sequenceAll(s.log);
    const key = await get('/log/key', null);
    expect(key.status).toBe(200);
    expect(logKeyWire.parse(key.body).public_key).toBe(bytesToHex(s.logKey.publicKey));
    const sthRes = await get('/log/sth', null);
    const sth = parseTreeHeadJson(cosignedTreeHeadWire.parse(sthRes.body).sth);
    expect(sth.treeSize).toBe(size);
    verifyTreeHead(sth, s.logKey.publicKey);
    // Recompute the tree from the served leaves; the signed root must be its root.
    const tree = new MemoryTree();
    for (let i = 0; i < size; i++) {
      const raw = (await get(`/log/proof/inclusion?index=${i}&size=${size}`, null)).body;
      expect(runLogCommand('log-verify-inclusion', JSON.stringify(raw)).exitCode).toBe(0);
      tree.appendLeaf(inclusionProofWire.parse(raw).leaf);
    }
    expect(bytesToHex(tree.root())).toBe(sth.root);
    for (const from of [0, 1, 2, size - 1, size]) {
      const c = (await get(`/log/proof/consistency?from=${from}&to=${size}`, null)).body;
      expect(runLogCommand('log-verify-consistency', JSON.stringify(c)).exitCode, `from ${from}`).toBe(0);
      expect((c as { old_root: string }).old_root).toBe(bytesToHex(tree.rootAt(from)));
    }
    // Past STHs stay provable, and each is kept.
    const first = cosignedTreeHeadWire.parse((await get(`/log/sth/${before}`, null)).body);
    expect(first.sth.tree_size).toBe(String(before));
    expect(first.sth.root).toBe(bytesToHex(tree.rootAt(before)));
    // Refusals: problem+json, never 500.
    for (const [path, status] of [
      [`/log/proof/inclusion?index=${size}&size=${size}`, 404],
      [`/log/proof/inclusion?index=0&size=${size + 5}`, 404],
      ['/log/proof/inclusion?index=-1&size=2', 400],
      ['/log/proof/consistency?from=3&to=2', 404],
      ['/log/sth/999999', 404],
      ['/log/sth/01', 400],
    ] as const) {
      const r = await get(path, null);
      expect(r.status, path).toBe(status);
      expect(r.type).toContain('application/problem+json');
    }
  });

  it('a run’s and a group’s leaves need the key, are the tenant’s only, and verify in one STH', async () => {
    const runId = await finishedRun(s.t);
    const group = await finishedGroup(s.t, 2);
    await sequenceAll(s.log);
    expect((await get(`/runs/${runId}/log`, null)).status).toBe(401);
    const other = await s.t.tenant('other-tenant');
    expect((await get(`/runs/${runId}/log`, other)).status).toBe(404);
    expect((await get(`/groups/${group.id}/proof`, other)).status).toBe(404);
    const r = loggedLeavesWire.parse((await get(`/runs/${runId}/log`)).body);
    expect(r.leaves.map((l) => decodeLeaf(Uint8Array.from(Buffer.from(l.leaf, 'hex'))).length)).toEqual([
      1, 2,
    ]);
    for (const l of r.leaves) {
      const inc = {
        leaf: l.leaf,
        index: l.index,
        tree_size: Number(r.sth.sth.tree_size),
        root: r.sth.sth.root,
        path: l.path,
      };
      expect(runLogCommand('log-verify-inclusion', JSON.stringify(inc)).exitCode).toBe(0);
    }
    const p = groupProofWire.parse((await get(`/groups/${group.id}/proof`)).body);
    expect(p.group_hash).toBe(idHash(group.id));
    const runs = new Set(
      p.leaves.map((l) => decodeLeaf(Uint8Array.from(Buffer.from(l.leaf, 'hex'))).runHash),
    );
    expect(runs).toEqual(new Set(group.runs.map(idHash)));
    const atSize = loggedLeavesWire.parse(
      (await get(`/groups/${group.id}/log?size=${p.sth.sth.tree_size}`)).body,
    );
    expect(atSize.leaves).toEqual(p.leaves);
  });

  it('keeps cosignatures from configured witnesses only, once each', async () => {
    await finishedRun(s.t);
    await sequenceAll(s.log);
    const sth = parseTreeHeadJson(cosignedTreeHeadWire.parse((await get('/log/sth', null)).body).sth);
    const post = (body: unknown) =>
      fetch(`${s.url}/log/cosignatures`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const ok = await post({ sth: treeHeadToJson(sth), cosignature: cosignTreeHead(sth, s.witness) });
    expect(ok.status).toBe(201);
    expect(cosignatureAcceptedWire.parse(await ok.json())).toEqual({
      tree_size: String(sth.treeSize),
      cosignatures: 1,
    });
    const again = await post({ sth: treeHeadToJson(sth), cosignature: cosignTreeHead(sth, s.witness) });
    expect(((await again.json()) as { cosignatures: number }).cosignatures).toBe(1);
    const stranger = await post({
      sth: treeHeadToJson(sth),
      cosignature: cosignTreeHead(sth, generateKeyPair()),
    });
    expect(stranger.status).toBe(403);
    const forged = { ...cosignTreeHead(sth, s.witness), signature: '00'.repeat(64) };
    expect((await post({ sth: treeHeadToJson(sth), cosignature: forged })).status).toBe(400);
    const other = { ...treeHeadToJson(sth), root: 'ab'.repeat(32) };
    expect((await post({ sth: other, cosignature: cosignTreeHead(sth, s.witness) })).status).toBe(409);
    expect((await post({ nonsense: true })).status).toBe(400);
    const served = cosignedTreeHeadWire.parse((await get('/log/sth', null)).body);
    expect(served.cosignatures).toEqual([cosignTreeHead(sth, s.witness)]);
  });

  it('signs a tree head at most once per interval while leaves arrive, and none when none arrive', async () => {
    await sequenceAll(s.log);
    let now = Date.now() + 10_000_000; // later than every STH so far
    const h = new HeadLog(s.t.core.internals.ldb.db, {
      key: s.logKey,
      sthIntervalMs: 2_000,
      clock: () => now,
    });
    await finishedRun(s.t);
    const a = await h.pass();
    expect(a.sequenced).toBeGreaterThan(0);
    expect(a.signed?.treeSize).toBe(a.size);
    await finishedRun(s.t);
    now += 1_000;
    const b = await h.pass();
    expect(b.sequenced).toBeGreaterThan(0);
    expect(b.signed).toBeNull(); // inside the interval: the leaves wait for the next STH
    now += 1_000;
    const c = await h.pass();
    expect(c).toMatchObject({ sequenced: 0, size: b.size });
    expect(c.signed?.treeSize).toBe(b.size);
    expect([a.settled, b.settled, c.settled]).toEqual([false, false, true]);
    now += 60_000;
    const d = await h.pass();
    expect(d.signed).toBeNull(); // nothing new: no STH
    expect(d.settled).toBe(true);
  });

  it('an idle loop probes for pending leaves and opens no sequencing pass until one arrives', async () => {
    await sequenceAll(s.log);
    let statements = 0; // every statement the loop sends, counted by a kysely plugin
    const db = s.t.core.internals.ldb.db.withPlugin({
      transformQuery: (args) => {
        statements += 1;
        return args.node;
      },
      transformResult: async (args) => args.result,
    });
    // Its clock is later than every STH so far (the test above signed one far ahead).
    const h = new HeadLog(db, {
      key: s.logKey,
      sthIntervalMs: 0,
      sequenceMs: 5,
      clock: () => Date.now() + 20_000_000,
    });
    const passes: boolean[] = [];
    const pass = h.pass.bind(h);
    h.pass = async (opts) => {
      const r = await pass(opts);
      passes.push(r.settled);
      return r;
    };
    h.start();
    try {
      await until('settled', async () => (passes.at(-1) === true ? true : undefined));
      // Settled: 30 more statements go by (30 ticks of one probe each; a pass is six) with no pass.
      const settledAt = passes.length;
      const mark = statements;
      await until('30 idle ticks', async () => (statements >= mark + 30 ? true : undefined));
      expect(passes.length).toBe(settledAt);
      // A leaf arrives: the next probe finds it, a pass sequences it and the loop settles again.
      const size = await treeSize(s.t.core.internals.ldb.db);
      await finishedRun(s.t);
      // A pass of its own, ended settled: the tree grows at the pass's commit, before the pass returns (another
      // connection sees it first), so the grown tree with the settled pass from before is not yet that pass.
      await until('the new leaf sequenced', async () =>
        passes.length > settledAt &&
        passes.at(-1) === true &&
        (await treeSize(s.t.core.internals.ldb.db)) > size
          ? true
          : undefined,
      );
    } finally {
      await h.stop();
    }
  });

  it('stop() waits for the probe in flight, and no pass begins after it was called', async () => {
    await sequenceAll(s.log);
    // The loop's probe of log_pending, held by a kysely plugin once armed; released, it answers "pending".
    const probes = new Set<unknown>();
    let armed = false;
    let held = false;
    let release = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const db = s.t.core.internals.ldb.db.withPlugin({
      transformQuery: (args) => {
        if (JSON.stringify(args.node).includes('FROM log_pending LIMIT 1')) probes.add(args.queryId);
        return args.node;
      },
      transformResult: async (args) => {
        if (!armed || !probes.has(args.queryId)) return args.result;
        held = true;
        await gate;
        return { ...args.result, rows: [{ one: 1 }] };
      },
    });
    const h = new HeadLog(db, {
      key: s.logKey,
      sthIntervalMs: 0,
      sequenceMs: 5,
      clock: () => Date.now() + 30_000_000,
    });
    let passCalls = 0;
    let lastSettled = false;
    const pass = h.pass.bind(h);
    h.pass = async (opts) => {
      passCalls += 1;
      const r = await pass(opts);
      lastSettled = r.settled;
      return r;
    };
    h.start();
    const events: string[] = [];
    let stopping: Promise<void> | undefined;
    try {
      await until('settled', async () => (lastSettled ? true : undefined));
      armed = true;
      await until('a probe held', async () => (held ? true : undefined));
      const before = passCalls;
      stopping = h.stop().then(() => {
        events.push('stopped');
      });
      // Before the fix stop() resolved at once (its promise chain is microtasks, done long before this
      // timer); with it, stop() cannot resolve while the probe is held, whatever the timer's margin.
      await Promise.race([stopping, new Promise((r) => setTimeout(r, 200))]);
      events.push('released');
      release();
      await stopping;
      expect(events).toEqual(['released', 'stopped']);
      // The probe said "pending", but the loop was stopped meanwhile: no pass began.
      expect(passCalls).toBe(before);
    } finally {
      release();
      await (stopping ?? h.stop());
    }
  });

  it('a pass is three statements: its lock, its reads, its writes (the leaves, nodes and tree head)', async () => {
    await sequenceAll(s.log);
    let statements = 0;
    const counting: KyselyPlugin = {
      transformQuery: (a) => {
        statements += 1;
        return a.node;
      },
      transformResult: async (a) => a.result,
    };
    // The same log (its key), through a database handle that counts the statements it is sent.
    const h = new HeadLog(s.t.core.internals.ldb.db.withPlugin(counting), {
      key: s.logKey,
      sthIntervalMs: 0,
    });
    await h.pass(); // its frontier read once
    await finishedRun(s.t);
    const before = await treeSize(s.t.core.internals.ldb.db);
    statements = 0;
    const r = await h.pass({ forceSign: true });
    expect(r.sequenced).toBeGreaterThan(0);
    expect(r.signed?.treeSize).toBe(before + r.sequenced);
    expect(statements).toBe(3);
    // Sequenced, signed and no longer pending: the served log goes on from there.
    expect(await treeSize(s.t.core.internals.ldb.db)).toBe(r.size);
    expect((await latestTreeHead(s.t.core.internals.ldb.db))?.treeSize).toBe(r.size);
    expect(await pendingLeaves(s.t.core.internals.ldb.db, 10)).toEqual([]);
    expect((await sequenceAll(s.log)) >= r.size).toBe(true);
  });

  it('one pending row per inserting statement, expanded in order; a pass never splits a row', async () => {
    const db = s.t.core.internals.ldb.db;
    const runId = await finishedRun(s.t);
    await sequenceAll(s.log);
    const rollback = new Error('rollback');
    await db
      .transaction()
      .execute(async (tx) => {
        expect(await pendingLeaves(tx, 1_000)).toEqual([]);
        // One statement, three segments (as the batch settle writes them): one pending row, in (run, idx) order.
        await sql`INSERT INTO record_segments (run_id, idx, tenant_id, kind, payload, head, created_at)
          SELECT ${runId}, 100 + i, 'default', 'closed', '{}'::jsonb, repeat(to_hex(i), 64), now()
          FROM generate_series(3, 1, -1) AS i`.execute(tx);
        const { rows } = await sql<{
          n: number;
        }>`SELECT jsonb_array_length(leaves) AS n FROM log_pending`.execute(tx);
        expect(rows.map((r) => Number(r.n))).toEqual([3]);
        await sql`INSERT INTO log_pending (leaves)
          VALUES (jsonb_build_array(jsonb_build_object('t', 'default', 'r', 'run_y', 'l', 1, 'h', ${'ab'.repeat(32)}::text)))`.execute(
          tx,
        );
        const two = await pendingLeaves(tx, 2);
        expect(two.map((l) => [l.runId, l.length, l.head])).toEqual([
          [runId, 102, '1'.repeat(64)],
          [runId, 103, '2'.repeat(64)],
          [runId, 104, '3'.repeat(64)],
        ]);
        expect(new Set(two.map((l) => l.id)).size).toBe(1);
        const all = await pendingLeaves(tx, 4);
        expect(all.map((l) => l.runId)).toEqual([runId, runId, runId, 'run_y']);
        expect(all[3]!.groupId).toBeNull();
        // A pass reads the same leaves with the tree's size and newest tree head, in one statement.
        for (const limit of [2, 4]) {
          const read = await readForPass(tx, limit);
          expect(read.pending).toEqual(await pendingLeaves(tx, limit));
          expect(read.size).toBe(await treeSize(tx));
          expect(read.last).toEqual(await latestTreeHead(tx));
        }
        throw rollback;
      })
      .catch((e: unknown) => {
        if (e !== rollback) throw e;
      });
  });
});
