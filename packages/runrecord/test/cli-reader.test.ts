// The reader's commands of the built CLI (issue 18 §4) against a log served over real HTTP by
// @everdict/headlog/testing — the control plane's `/log` routes (issue 18 §2) are not built yet. Staged
// attacks: a record served cut short, a forked record (served, and logged twice), a log that rewrote a
// leaf, a group report that drops a run.
import { bytesToHex, cosignTreeHead, generateKeyPair, groupProofWire, type KeyPair } from '@everdict/headlog';
import { startTestLogServer, TestLog, type TestLogServer } from '@everdict/headlog/testing';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunRecord } from '../src/types.js';
import { encodeWire } from '../src/wire.js';
import { requireBuiltCli, runCli } from './cli-process.js';
import { addr, closed, exec, forge } from './helpers.js';

/** The CLI's answer, its stdout as JSON where it is JSON. Calls that do not depend on each other start together. */
const run = async (args: string[], input: string) => {
  const r = await runCli(args, input);
  let json: Record<string, unknown> | undefined;
  try {
    json = r.json();
  } catch {
    json = undefined;
  }
  return { code: r.code, out: r.out, err: r.err, json };
};

beforeAll(requireBuiltCli);

const record = forge([exec(1), exec(2), exec(3), closed()]);
const wire = (r: RunRecord) => JSON.stringify(encodeWire(r));
const cut = (r: RunRecord, n: number): RunRecord => ({
  ...r,
  segments: r.segments.slice(0, n),
  head: r.segments[n - 1]!.head,
});

let witness: KeyPair;
let log: TestLog;
let server: TestLogServer;
const W = () => bytesToHex(witness.publicKey);

function cosign(l: TestLog) {
  const sth = l.publish();
  l.addCosignature(sth, cosignTreeHead(sth, witness));
  return sth;
}

beforeEach(async () => {
  witness = generateKeyPair();
  log = new TestLog(generateKeyPair(), [bytesToHex(witness.publicKey)]);
  // run-1 (this record) and run-2, run-3 of group exp-7, interleaved; run-9 of another tenant.
  for (const [i, s] of record.segments.entries()) {
    log.append({ tenantId: 'acme', runId: 'run-1', groupId: 'exp-7', length: i + 1, head: s.head });
    if (i === 0)
      log.append({ tenantId: 'acme', runId: 'run-2', groupId: 'exp-7', length: 1, head: addr(0x42) });
    if (i === 1) log.append({ tenantId: 'other', runId: 'run-9', length: 1, head: addr(0x43) });
  }
  log.append({ tenantId: 'acme', runId: 'run-3', groupId: 'exp-7', length: 1, head: addr(0x44) });
  cosign(log);
  server = await startTestLogServer({ log, apiKeys: { 'key-acme': 'acme' } });
});
afterEach(async () => {
  await server.close();
});

const verifyArgs = (extra: string[] = []) => [
  'verify',
  '--log',
  server.url,
  '--run',
  'run-1',
  '--tenant',
  'acme',
  '--key',
  'key-acme',
  '--witness-key',
  W(),
  '--min-witnesses',
  '1',
  ...extra,
];

describe('everdict-runrecord verify --log', () => {
  it('an honest record: the verify summary plus the log it was proven in', async () => {
    const [plain, r] = await Promise.all([run(['verify'], wire(record)), run(verifyArgs(), wire(record))]);
    expect(r.code, r.err).toBe(0);
    const { log: proven, ...summary } = r.json!;
    expect(summary).toEqual(plain.json);
    expect(proven).toEqual({
      tree_size: String(log.size),
      root: log.latest()!.root,
      leaves: 4,
      witnesses: 1,
    });
  });

  it('takes the API key from EVERDICT_API_KEY when --key is absent; with neither it is a usage error', async () => {
    const { LogUsageError, verifyWithLog } = await import('../src/log-commands.js');
    // The command's own arguments (the CLI passes what follows `verify`).
    const args = verifyArgs()
      .slice(1)
      .filter((a, i, all) => a !== '--key' && all[i - 1] !== '--key');
    expect(args).not.toContain('key-acme');
    const r = await verifyWithLog(args, wire(record), { EVERDICT_API_KEY: 'key-acme' });
    expect(r.exitCode, r.message).toBe(0);
    expect((r.output as { log?: { leaves: number } }).log?.leaves).toBe(4);
    // A wrong key in the environment is the log's refusal (its runs route answers 401): LogUnavailable.
    const refused = await verifyWithLog(args, wire(record), { EVERDICT_API_KEY: 'key-other' });
    expect(refused.output).toEqual({ ok: false, error: 'LogUnavailable' });
    await expect(verifyWithLog(args, wire(record), {})).rejects.toBeInstanceOf(LogUsageError);
    // The flag wins over the environment.
    const flagged = await verifyWithLog(verifyArgs().slice(1), wire(record), {
      EVERDICT_API_KEY: 'key-other',
    });
    expect(flagged.exitCode, flagged.message).toBe(0);
  });

  it('a record served cut short is TruncatedRecord', async () => {
    const r = await run(verifyArgs(), wire(cut(record, 3)));
    expect([r.code, r.json], r.err).toEqual([1, { ok: false, error: 'TruncatedRecord' }]);
  });

  it('a record served with another history is ForkedRecord', async () => {
    const other = forge([exec(1), exec(2), exec(9), closed()]);
    const r = await run(verifyArgs(), wire(other));
    expect([r.code, r.json], r.err).toEqual([1, { ok: false, error: 'ForkedRecord' }]);
  });

  it('a log that logged two continuations of the run is ForkedRecord, even for the record it logged first', async () => {
    const other = forge([exec(1), exec(7)]);
    log.append({
      tenantId: 'acme',
      runId: 'run-1',
      groupId: 'exp-7',
      length: 2,
      head: other.segments[1]!.head,
    });
    cosign(log);
    const r = await run(verifyArgs(), wire(record));
    expect([r.code, r.json], r.err).toEqual([1, { ok: false, error: 'ForkedRecord' }]);
  });

  it('a log that rewrote a logged leaf: its latest tree does not extend the cosigned one (InconsistentLog)', async () => {
    const rewritten = log.clone();
    rewritten.rewrite(1, {
      tenantId: 'acme',
      runId: 'run-2',
      groupId: 'exp-7',
      length: 1,
      head: addr(0x66),
      loggedMs: 1,
    });
    rewritten.append({ tenantId: 'acme', runId: 'run-4', length: 1, head: addr(0x45) });
    rewritten.publish();
    // The run's proofs come from the tree the witness cosigned; the log's head is the rewritten one.
    server.serve(rewritten, { runs: log });
    const r = await run(verifyArgs(), wire(record));
    expect([r.code, r.json], r.err).toEqual([1, { ok: false, error: 'InconsistentLog' }]);
    // Served wholly from the rewritten tree, nothing is cosigned: the witness never vouched for it.
    server.serve(rewritten);
    const alone = await run(verifyArgs(), wire(record));
    expect([alone.code, alone.json], alone.err).toEqual([1, { ok: false, error: 'InsufficientWitnesses' }]);
  });

  it('too few witnesses, a log that does not answer, and usage errors', async () => {
    const stranger = bytesToHex(generateKeyPair().publicKey);
    const [few, unauthorised] = await Promise.all([
      run(
        [
          ...verifyArgs().slice(0, 9),
          '--witness-key',
          stranger,
          '--witness-key',
          W(),
          '--min-witnesses',
          '2',
        ],
        wire(record),
      ),
      run(
        verifyArgs().map((a) => (a === 'key-acme' ? 'nope' : a)),
        wire(record),
      ),
    ]);
    expect([few.code, few.json], few.err).toEqual([1, { ok: false, error: 'InsufficientWitnesses' }]);
    expect([unauthorised.code, unauthorised.json], unauthorised.err).toEqual([
      1,
      { ok: false, error: 'LogUnavailable' },
    ]);
    const url = server.url;
    await server.close();
    const down = await run(
      verifyArgs().map((a) => (a === url ? url : a)),
      wire(record),
    );
    expect([down.code, down.json], down.err).toEqual([1, { ok: false, error: 'LogUnavailable' }]);
    server = await startTestLogServer({ log });
    const [usage, bad] = await Promise.all([
      run(['verify', '--log', server.url, '--tenant', 'acme', '--key', 'k'], wire(record)),
      run(verifyArgs(), '{not json'),
    ]);
    expect(usage.code).toBe(2);
    expect(usage.err).toMatch(/--run is required/);
    expect([bad.code, bad.json], bad.err).toEqual([1, { ok: false, error: 'MalformedRecord' }]);
  });
});

describe('everdict-runrecord check-group', () => {
  async function groupProof() {
    const res = await fetch(`${server.url}/groups/exp-7/proof`, {
      headers: { authorization: 'Bearer key-acme' },
    });
    expect(res.status).toBe(200);
    return groupProofWire.parse(await res.json());
  }
  const args = () => ['check-group', '--witness-key', W(), '--log-key', bytesToHex(log.key.publicKey)];

  it('a complete report passes; a reported run with no leaf yet is listed as unlogged', async () => {
    const proof = await groupProof();
    const r = await run(
      args(),
      JSON.stringify({ proof, report: { groupId: 'exp-7', runs: ['run-1', 'run-2', 'run-3', 'run-5'] } }),
    );
    expect(r.code, r.err).toBe(0);
    expect(r.json).toEqual({ ok: true, tree_size: String(log.size), logged_runs: 3, unlogged: ['run-5'] });
  });

  it('a report that drops a logged run is OmittedRun', async () => {
    const proof = await groupProof();
    const r = await run(
      args(),
      JSON.stringify({ proof, report: { groupId: 'exp-7', runs: ['run-1', 'run-3'] } }),
    );
    expect([r.code, r.json], r.err).toEqual([1, { ok: false, error: 'OmittedRun' }]);
  });

  it('a proof for another group, an edited leaf, a missing cosignature, a malformed input', async () => {
    const proof = await groupProof();
    const edited = structuredClone(proof);
    const leaf = edited.leaves[1]!.leaf;
    edited.leaves[1]!.leaf = `${leaf.slice(0, -1)}${leaf.endsWith('0') ? '1' : '0'}`;
    const uncosigned = { ...proof, sth: { ...proof.sth, cosignatures: [] } };
    const [other, tampered, r, malformed] = await Promise.all([
      run(args(), JSON.stringify({ proof, report: { groupId: 'exp-8', runs: [] } })),
      run(args(), JSON.stringify({ proof: edited, report: { groupId: 'exp-7', runs: [] } })),
      run(
        args(),
        JSON.stringify({
          proof: uncosigned,
          report: { groupId: 'exp-7', runs: ['run-1', 'run-2', 'run-3'] },
        }),
      ),
      run(args(), JSON.stringify({ proof, report: { groupId: 'exp-7' } })),
    ]);
    expect([other.code, other.json], other.err).toEqual([1, { ok: false, error: 'ForeignLeaf' }]);
    expect([tampered.code, tampered.json], tampered.err).toEqual([
      1,
      { ok: false, error: 'InclusionFailed' },
    ]);
    expect([r.code, r.json], r.err).toEqual([1, { ok: false, error: 'InsufficientWitnesses' }]);
    expect([malformed.code, malformed.json], malformed.err).toEqual([
      1,
      { ok: false, error: 'MalformedProof' },
    ]);
  });
});

describe('a log does not vouch for itself (a trusted --log-key, or k ≥ 1 named witnesses)', () => {
  /** An impostor's log under its own key: the record cut to 2 segments, group exp-7 without run-2. */
  function forgedLog(): TestLog {
    const forged = new TestLog(generateKeyPair(), []);
    for (const [i, s] of record.segments.slice(0, 2).entries())
      forged.append({ tenantId: 'acme', runId: 'run-1', groupId: 'exp-7', length: i + 1, head: s.head });
    forged.append({ tenantId: 'acme', runId: 'run-3', groupId: 'exp-7', length: 1, head: addr(0x44) });
    forged.publish();
    return forged;
  }
  const base = () => verifyArgs().slice(0, 9); // verify --log URL --run --tenant --key, no witness flags
  const logKey = () => bytesToHex(log.key.publicKey);

  it('verify --log with no trusted anchor is a usage error; with a pinned --log-key the impostor is BadSignature', async () => {
    server.serve(forgedLog());
    const cutShort = wire(cut(record, 2));
    const [bare, zero, pinned] = await Promise.all([
      run(base(), cutShort),
      run([...base(), '--min-witnesses', '0'], cutShort),
      run([...base(), '--log-key', logKey()], cutShort),
    ]);
    for (const r of [bare, zero]) {
      // it verified itself: exit 0, ok
      expect([r.code, r.out], r.err).toEqual([2, '']);
      expect(r.err).toMatch(/--log-key/);
    }
    expect([pinned.code, pinned.json], pinned.err).toEqual([1, { ok: false, error: 'BadSignature' }]);
    server.serve(log); // the real log, its key pinned and no witness asked for: proven by its signature
    const honest = await run([...base(), '--log-key', logKey(), '--min-witnesses', '0'], wire(record));
    expect([honest.code, honest.json?.ok], honest.err).toEqual([0, true]);
  });

  it('check-group with no trusted anchor is a usage error; with a pinned --log-key the impostor is BadSignature', async () => {
    server.serve(forgedLog());
    const res = await fetch(`${server.url}/groups/exp-7/proof`, {
      headers: { authorization: 'Bearer key-acme' },
    });
    const input = JSON.stringify({
      proof: groupProofWire.parse(await res.json()),
      report: { groupId: 'exp-7', runs: ['run-1', 'run-3'] }, // run-2 omitted, and the impostor agrees
    });
    const [bare, zero, pinned] = await Promise.all([
      run(['check-group'], input),
      run(['check-group', '--min-witnesses', '0'], input),
      run(['check-group', '--log-key', logKey()], input),
    ]);
    for (const r of [bare, zero]) {
      // it checked: exit 0, ok
      expect([r.code, r.out], r.err).toEqual([2, '']);
      expect(r.err).toMatch(/--log-key/);
    }
    expect([pinned.code, pinned.json], pinned.err).toEqual([1, { ok: false, error: 'BadSignature' }]);
  });
});
