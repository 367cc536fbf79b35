// The attacks of issue 18's Proof, each staged against a REAL control plane and database (PGlite core,
// served over HTTP) the way a dishonest operator would make them — in the database, with the log key — and
// each caught by the BUILT `everdict-runrecord` (verify --log, check-group) and by the BUILT
// `everdict-witness` (exit 3 on a fork). A witness restarted from its state file refuses a log rewritten
// while it was down.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bytesToHex, cosignedTreeHeadWire } from '@everdict/headlog';
import { decodeWire, reopenRecord, type WireRecord } from '@everdict/runrecord';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_KEY, call } from '../http/testing/harness.js';
import {
  dropRunFromLog,
  finishedGroup,
  finishedRun,
  RUNRECORD_CLI,
  rebuildAndResign,
  rewriteLeaf,
  runrecord,
  type ServedLog,
  sequenceAll,
  servedLog,
  truncateLog,
  WITNESS_CLI,
  witnessOnce,
} from './testing/served.js';

beforeAll(() => {
  for (const f of [RUNRECORD_CLI, WITNESS_CLI])
    expect(existsSync(f), `${f}: build @everdict/runrecord and @everdict/witness first`).toBe(true);
});

// One control plane for the file: each test stages its attack on runs of its own and starts a witness of
// its own (a fresh state file: it pins the key and accepts the log as it finds it, then watches it).
let s: ServedLog;
let dir: string;
beforeAll(async () => {
  s = await servedLog();
}, 300_000);
afterAll(async () => {
  await s?.close();
});
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cp-log-attacks-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const W = () => bytesToHex(s.witness.publicKey);
const db = () => s.t.core.internals.ldb.db;
const wireOf = async (runId: string) =>
  (await call(s.t.app, 'GET', `/runs/${runId}/record?view=wire`)).body as unknown as WireRecord;

/**
 * `verify --log` for a run as a reader that wants `k` cosignatures from the test's witness; with none it pins the
 * log's key (a reader must trust something the log does not serve).
 */
const verifyLog = (runId: string, wire: WireRecord, k = 1) =>
  runrecord(
    [
      'verify',
      '--log',
      s.url,
      '--run',
      runId,
      '--tenant',
      'default',
      '--key',
      ADMIN_KEY,
      ...(k > 0
        ? ['--witness-key', W(), '--min-witnesses', String(k)]
        : ['--log-key', bytesToHex(s.logKey.publicKey)]),
    ],
    JSON.stringify(wire),
  );

async function groupProof(groupId: string) {
  return (await call(s.t.app, 'GET', `/groups/${groupId}/proof`)).body;
}
const checkGroup = (proof: unknown, groupId: string, runs: string[], k = 1) =>
  runrecord(
    [
      'check-group',
      '--log-key',
      bytesToHex(s.logKey.publicKey),
      ...(k > 0 ? ['--witness-key', W(), '--min-witnesses', String(k)] : []),
    ],
    JSON.stringify({ proof, report: { groupId, runs } }),
  );

/** Sequence, then let the witness accept (and cosign) the new tree. */
async function witnessed(state: string) {
  await sequenceAll(s.log);
  const w = await witnessOnce(s, state);
  expect(w.code, JSON.stringify(w.lines)).toBe(0);
  return w;
}

describe('attacks on a real control plane', { timeout: 300_000 }, () => {
  it('honest: the witness cosigns, the record verifies against the log, the full group report checks', async () => {
    const runId = await finishedRun(s.t);
    const group = await finishedGroup(s.t, 3);
    const state = join(dir, 'w.json');
    await witnessed(state);
    const sth = cosignedTreeHeadWire.parse(
      (await fetch(`${s.url}/log/sth`).then((r) => r.json())) as unknown,
    );
    expect(sth.cosignatures.map((c) => c.witness)).toEqual([W()]);
    const ok = await verifyLog(runId, await wireOf(runId));
    expect(ok.code, JSON.stringify(ok.json) + ok.err).toBe(0);
    expect(ok.json).toMatchObject({ ok: true, log: { leaves: 2, witnesses: 1 } });
    const g = await checkGroup(await groupProof(group.id), group.id, group.runs);
    expect(g.code, JSON.stringify(g.json)).toBe(0);
    expect(g.json).toMatchObject({ ok: true, logged_runs: 3 });
    // More runs; the witness accepts the extension (consistency proof from the control plane).
    await finishedRun(s.t);
    await witnessed(state);
  });

  it('a record truncated in the database is TruncatedRecord; hiding it in the log too is a fork', async () => {
    const runId = await finishedRun(s.t);
    const state = join(dir, 'w.json');
    await witnessed(state);
    const full = await wireOf(runId);
    expect(full.segments).toHaveLength(2);
    await sql`DELETE FROM record_segments WHERE run_id = ${runId} AND idx = 1`.execute(db());
    await sql`UPDATE runs SET record_head = ${full.segments[0]!.head}, record_length = 1 WHERE id = ${runId}`.execute(
      db(),
    );
    const cut = await wireOf(runId);
    expect(cut.segments).toHaveLength(1);
    const r = await verifyLog(runId, cut);
    expect(r.json).toEqual({ ok: false, error: 'TruncatedRecord' });
    expect(r.code).toBe(1);
    // The operator drops the run's last leaf from the log as well: the witness refuses the smaller tree.
    const { rows } = await sql<{ idx: unknown }>`
      SELECT idx FROM log_leaves WHERE run_id = ${runId} AND length = 2`.execute(db());
    await truncateLog(s, Number(rows[0]!.idx));
    await sequenceAll(s.log);
    const w = await witnessOnce(s, state);
    expect(w.code).toBe(3);
    expect(w.lines.find((l) => l.alarm === 'fork')).toMatchObject({ code: 'InconsistentLog' });
    // A reader who asks for the witness's cosignature cannot be served the rewritten tree.
    expect((await verifyLog(runId, cut)).json).toEqual({ ok: false, error: 'InsufficientWitnesses' });
  });

  it('a forked record (another continuation) is ForkedRecord; a log holding both, and a forked tree, too', async () => {
    const runId = await finishedRun(s.t);
    const state = join(dir, 'w.json');
    await witnessed(state);
    const honest = await wireOf(runId);
    // Reader B is served another continuation after the first segment: closed `abandoned`, not `completed`.
    const host = reopenRecord(
      decodeWire({ ...honest, segments: honest.segments.slice(0, 1), head: honest.segments[0]!.head }),
    );
    host.apply({ op: 'close', reason: 'abandoned' });
    const forked = host.toWire() as unknown as WireRecord;
    const other = { ...forked, attestations: honest.attestations } as WireRecord;
    expect(other.head).not.toBe(honest.head);
    expect((await verifyLog(runId, other)).json).toEqual({ ok: false, error: 'ForkedRecord' });
    // The control plane logs the second continuation too (a pending leaf, as its trigger would write it):
    // the honest reader now finds two heads at one length.
    await sql`INSERT INTO log_pending (leaves)
      VALUES (jsonb_build_array(jsonb_build_object('t', 'default', 'r', ${runId}::text, 'l', 2, 'h', ${other.head}::text)))`.execute(
      db(),
    );
    await witnessed(state); // an append: consistent, so the witness cosigns it …
    expect((await verifyLog(runId, honest)).json).toEqual({ ok: false, error: 'ForkedRecord' }); // … and the reader catches it
    // A forked TREE: the log rewinds and shows a later audience another history from the same size.
    const size = await s.log.size();
    await truncateLog(s, size - 2);
    await sql`INSERT INTO log_pending (leaves)
      VALUES (jsonb_build_array(jsonb_build_object('t', 'default', 'r', ${runId}::text, 'l', 2, 'h', ${other.head}::text),
                                jsonb_build_object('t', 'default', 'r', 'run_elsewhere', 'l', 1, 'h', ${honest.head}::text)))`.execute(
      db(),
    );
    await sequenceAll(s.log);
    expect(await s.log.size()).toBe(size);
    const w = await witnessOnce(s, state);
    expect(w.code).toBe(3);
    expect(w.lines.find((l) => l.alarm === 'fork')).toBeDefined();
  });

  it('a logged leaf rewritten in place (UPDATE) fails its inclusion proof; rewritten with its tree, the witness alarms', async () => {
    const runId = await finishedRun(s.t);
    const state = join(dir, 'w.json');
    await witnessed(state);
    const honest = await wireOf(runId);
    const { rows } = await sql<{ idx: unknown }>`
      SELECT idx FROM log_leaves WHERE run_id = ${runId} AND length = 1`.execute(db());
    const index = Number(rows[0]!.idx);
    await rewriteLeaf(s, index, 'ab'.repeat(32));
    expect((await verifyLog(runId, honest)).json).toEqual({ ok: false, error: 'InclusionFailed' });
    // The operator recomputes the tree over the rewritten leaf and re-signs its tree heads.
    await rebuildAndResign(s);
    await finishedRun(s.t);
    await sequenceAll(s.log);
    const w = await witnessOnce(s, state);
    expect(w.code).toBe(3);
    expect(w.lines.find((l) => l.alarm === 'fork')).toMatchObject({ code: 'InconsistentLog' });
    expect((await verifyLog(runId, honest)).json).toEqual({ ok: false, error: 'InsufficientWitnesses' });
    expect((await verifyLog(runId, honest, 0)).json).toEqual({ ok: false, error: 'ForkedRecord' });
  });

  it('a group report that drops a run is OmittedRun; dropping the run from the log too is a fork', async () => {
    const group = await finishedGroup(s.t, 3);
    const state = join(dir, 'w.json');
    await witnessed(state);
    const proof = await groupProof(group.id);
    const report = group.runs.slice(1);
    expect((await checkGroup(proof, group.id, report)).json).toEqual({ ok: false, error: 'OmittedRun' });
    // To make the short report check, the operator removes the run's leaves and re-sequences the log.
    await dropRunFromLog(s, group.runs[0]!);
    await sequenceAll(s.log);
    const lie = await groupProof(group.id);
    expect((await checkGroup(lie, group.id, report, 0)).json).toMatchObject({ ok: true }); // un-witnessed, it "checks"
    expect((await checkGroup(lie, group.id, report)).json).toEqual({
      ok: false,
      error: 'InsufficientWitnesses',
    });
    const w = await witnessOnce(s, state);
    expect(w.code).toBe(3);
    expect(w.lines.find((l) => l.alarm === 'fork')).toBeDefined();
  });

  it('a witness restarted from its state file refuses a log rewritten while it was down', async () => {
    const runId = await finishedRun(s.t);
    await finishedRun(s.t);
    const state = join(dir, 'w.json');
    await witnessed(state); // the witness process exits: it is "down" from here
    const { rows } = await sql<{ idx: unknown }>`
      SELECT idx FROM log_leaves WHERE run_id = ${runId} ORDER BY idx LIMIT 1`.execute(db());
    await rewriteLeaf(s, Number(rows[0]!.idx), 'cd'.repeat(32));
    await rebuildAndResign(s); // the same size, another root, re-signed
    const restarted = await witnessOnce(s, state);
    expect(restarted.code).toBe(3);
    expect(restarted.lines.find((l) => l.alarm === 'fork')).toBeDefined();
    // … and keeps refusing it after yet another restart, also once the log has grown.
    await finishedRun(s.t);
    await sequenceAll(s.log);
    expect((await witnessOnce(s, state)).code).toBe(3);
  });
});
