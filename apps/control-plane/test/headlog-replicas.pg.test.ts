// Two replicas on one PostgreSQL database, both dispatching and both running the head log's sequencer:
// the advisory lock lets one pass at a time extend the tree, so every committed segment becomes exactly one
// leaf, the indexes are dense, and the latest STH's root is the root of the leaves as stored, whichever
// replica sequenced which part. Runs only with EVERDICT_TEST_DATABASE_URL.
import {
  bytesToHex,
  decodeLeaf,
  generateKeyPair,
  idHash,
  MemoryTree,
  verifyTreeHead,
} from '@everdict/headlog';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Core, startCore } from '../src/core.js';
import { announceSkippedLiveSuite, createLiveDatabase, LIVE_PG } from './db.js';

announceSkippedLiveSuite('test/headlog-replicas.pg.test.ts');
const KEY = 'evk_headlog_replicas_test_key_00000';
const RUNS = 120;

describe.runIf(LIVE_PG)('the head log on two replicas', { timeout: 300_000 }, () => {
  let live: Awaited<ReturnType<typeof createLiveDatabase>>;
  let a: Core;
  let b: Core;
  const logKey = generateKeyPair();

  beforeAll(async () => {
    live = await createLiveDatabase();
    const opts = (replicaId: string) => ({
      databaseUrl: live.url,
      bootstrapKey: KEY,
      policy: { maxConcurrent: 1_000, maxQueued: 10_000 },
      scheduler: { pollMs: 50, replicaId },
      headLog: { key: logKey, sequenceMs: 20, sthIntervalMs: 50, batch: 17 },
    });
    a = await startCore(opts('a'));
    b = await startCore(opts('b'));
  }, 300_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await live?.drop();
  });

  it('dense indexes, one leaf per segment, one tree', async () => {
    const principal = await a.services.auth.authenticate(KEY);
    await Promise.all(
      Array.from({ length: RUNS }, (_, i) =>
        (i % 2 ? a : b).services.runs.create(principal, {
          kind: 'analysis',
          subject: { config: { fn: 'echo', message: `r${i}` } },
        }),
      ),
    );
    const db = a.internals.deps.db;
    const count = async (q: ReturnType<typeof sql<{ n: unknown }>>) =>
      Number((await q.execute(db)).rows[0]!.n);
    for (let i = 0; ; i++) {
      const settled = await count(
        sql`SELECT count(*) AS n FROM runs WHERE status IN ('succeeded', 'failed')`,
      );
      const pending = await count(sql`SELECT count(*) AS n FROM log_pending`);
      const size = await a.headLog!.size();
      const sth = await a.headLog!.latest().catch(() => null);
      if (settled === RUNS && pending === 0 && sth?.treeSize === size) break;
      expect(i, `settled ${settled}, pending ${pending}, size ${size}`).toBeLessThan(6_000);
      await new Promise((r) => setTimeout(r, 50));
    }
    const segments = await sql<{ run_id: string; idx: number; head: string }>`
      SELECT run_id, idx, head FROM record_segments`.execute(db);
    const { rows } = await sql<{ idx: unknown; leaf: string }>`
      SELECT idx, encode(leaf, 'hex') AS leaf FROM log_leaves ORDER BY idx`.execute(db);
    expect(rows.map((r) => Number(r.idx))).toEqual([...Array(segments.rows.length).keys()]);
    const tree = new MemoryTree();
    const seen = new Set<string>();
    for (const r of rows) {
      const bytes = Uint8Array.from(Buffer.from(r.leaf, 'hex'));
      tree.appendLeaf(bytes);
      const l = decodeLeaf(bytes);
      seen.add(`${l.runHash}:${l.length}:${l.head}`);
    }
    for (const s of segments.rows) expect(seen.has(`${idHash(s.run_id)}:${s.idx + 1}:${s.head}`)).toBe(true);
    expect(seen.size).toBe(segments.rows.length);
    const sth = await b.headLog!.latest();
    verifyTreeHead(sth, logKey.publicKey);
    expect(sth.root).toBe(bytesToHex(tree.root()));
    // Both replicas answer the same proofs from the stored nodes.
    expect(await a.headLog!.consistency(1, sth.treeSize)).toEqual(
      await b.headLog!.consistency(1, sth.treeSize),
    );
  });
});
