// Drives the built CLI (dist/cli.js) exactly as the conformance suite does: stdin JSON, stdout JSON, exit codes.
// The tests are independent (each its own inputs): they run concurrently, the CLI starts a few at a time.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { pkg, requireBuiltCli, runCli as run } from './cli-process.js';
import { addr } from './helpers.js';

const ops = readFileSync(`${pkg}examples/ops.json`, 'utf8');
const fixture = readFileSync(`${pkg}examples/record.json`, 'utf8');
/** The example steward key of examples/make-ops.mjs (public: it signs the example record's bundle). */
const STEWARD = 'c5c6ab345c4cea533b76ee64e7303927a5df75d760a56c6ff9c6369a88b21499';

beforeAll(requireBuiltCli);

/** `build` of examples/ops.json: one start, read by the two tests that check its output. */
let built: ReturnType<typeof run> | undefined;
const buildExample = () => {
  built ??= run(['build'], ops);
  return built;
};

describe.concurrent('everdict-runrecord CLI', () => {
  it('build prints the wire form (exit 0), identical to the committed fixture', async () => {
    const r = await buildExample();
    expect(r.code).toBe(0);
    expect(r.json()).toEqual(JSON.parse(fixture));
  });

  it('verify prints the spec summary (exit 0), with or without a matching --expect-head', async () => {
    const head = JSON.parse(fixture).head;
    const expected = {
      ok: true,
      head,
      length: 8,
      idle_uj: '1336400',
      account: 'non_blocking',
      phase: 'closed',
      cost: { active_uj: '70800000', idle_uj: '1336400', total_uj: '72136400', unresolved: 0 },
      signed_by: [STEWARD],
    };
    const [plain, r, upper] = await Promise.all([
      run(['verify'], fixture),
      run(['verify', '--expect-head', head], fixture),
      run(['verify', `--expect-head=${head.toUpperCase()}`], fixture),
    ]);
    expect(plain.json()).toEqual(expected);
    expect([r.code, r.out.trim()]).toEqual([0, JSON.stringify(expected)]);
    expect(upper.code).toBe(0);
  });

  it('verify failure: exit 1, {"ok":false,"error","index"}; index absent where no segment is to blame', async () => {
    const w = JSON.parse(fixture);
    w.segments[4].snapshot = { transcript: addr(1) };
    const [r, e, m] = await Promise.all([
      run(['verify'], JSON.stringify(w)),
      run(['verify', '--expect-head', addr(0)], fixture),
      run(['verify'], '{not json'),
    ]);
    expect([r.code, r.json()]).toEqual([1, { ok: false, error: 'HeadMismatch', index: 4 }]);
    expect([e.code, e.json()]).toEqual([1, { ok: false, error: 'HeadMismatch' }]);
    expect([m.code, m.json()]).toEqual([1, { ok: false, error: 'MalformedRecord' }]);
  });

  it('build refusal: exit 1, {"error","index","length","head"} describing the record as it stood', async () => {
    const doc = JSON.parse(ops);
    const twoOps = JSON.stringify({ ...doc, ops: doc.ops.slice(0, 2) });
    doc.ops[2] = { ...doc.ops[2], idle_uj: '0' };
    const zeroIdle = JSON.stringify(doc);
    doc.ops[2] = { op: 'jump' };
    const [okRun, r, jump, badUnit, after] = await Promise.all([
      run(['build'], twoOps),
      run(['build'], zeroIdle),
      run(['build'], JSON.stringify(doc)),
      run(['build'], JSON.stringify({ unit_id: 'x', grants_id: addr(1), ops: [] })),
      run(['build'], JSON.stringify({ ...JSON.parse(ops), ops: [...JSON.parse(ops).ops, { op: 'x' }] })),
    ]);
    const ok = okRun.json();
    expect([r.code, r.json()]).toEqual([1, { error: 'ZeroIdleEnergy', index: 2, length: 2, head: ok.head }]);
    expect(jump.json()).toMatchObject({
      error: 'MalformedRecord',
      index: 2,
      length: 2,
    });
    expect(badUnit.json()).toEqual({
      error: 'MalformedRecord',
    });
    expect(after.json()).toMatchObject({ error: 'RecordClosed', index: 8, length: 8 });
  });

  it('inspect prints a table (index, kind, head prefix, snapshot form, idle energy, account)', async () => {
    const w = JSON.parse(fixture);
    w.segments[3].attestation = addr(5);
    const [r, bad] = await Promise.all([run(['inspect'], fixture), run(['inspect'], JSON.stringify(w))]);
    expect(r.code).toBe(0);
    expect(r.out).toContain('verifies from genesis');
    expect(r.out).toMatch(/#\s+kind\s+head\s+snapshot\s+idle energy\s+attestation\s+account/);
    expect(r.out).toContain('cost    72.136400 J = active 70.800000 J + idle 1.336400 J');
    expect(r.out).toContain(`signed  ${STEWARD}`);
    expect(r.out).toMatch(/0\s+executed\s+[0-9a-f]{12}\s+—\s+—\s+48,200,000 µJ yielded, signed c5c6ab345c4c/);
    expect(r.out).toMatch(/2\s+resumed\s+[0-9a-f]{12}\s+image\+memory\s+1,250,000 µJ measured/);
    expect(r.out).toMatch(/4\s+suspended\s+[0-9a-f]{12}\s+transcript/);
    expect(r.out).toContain('dispatched review#2 · resolved build#1');
    expect(bad.code).toBe(1);
    expect(bad.out).toContain('FAILS verification: HeadMismatch at segment 3');
  });

  it('verify --trust-key (repeatable, either case): trusted → exit 0; untrusted → UntrustedAttestation', async () => {
    const other = addr(7);
    const w = JSON.parse(fixture);
    const first = Object.keys(w.attestations)[0] as string;
    w.attestations[first].active_uj = '1';
    const mismatched = JSON.stringify(w);
    w.attestations = null;
    const [either, eq, r, mismatch, none] = await Promise.all([
      run(['verify', '--trust-key', other, '--trust-key', STEWARD.toUpperCase()], fixture),
      run(['verify', `--trust-key=${STEWARD}`], fixture),
      run(['verify', '--trust-key', other], fixture),
      run(['verify'], mismatched),
      run(['verify'], JSON.stringify(w)),
    ]);
    expect(either.code).toBe(0);
    expect(eq.json()).toMatchObject({
      ok: true,
      signed_by: [STEWARD],
    });
    expect([r.code, r.json()]).toEqual([1, { ok: false, error: 'UntrustedAttestation', index: 0 }]);
    expect(mismatch.json()).toEqual({
      ok: false,
      error: 'AttestationMismatch',
      index: 0,
    });
    expect(none.json()).toEqual({ ok: false, error: 'MalformedRecord' });
  });

  it('build with body: bundles it, or refuses a body that is not bound here', async () => {
    const doc = JSON.parse(ops);
    doc.ops[3].body = doc.ops[0].body; // bound to position 0
    const unbound = JSON.stringify(doc);
    doc.ops[3] = {
      ...doc.ops[0],
      body: { ...doc.ops[0].body, signature: { ...doc.ops[0].body.signature, key: addr(3) } },
    };
    doc.ops.splice(0, 3, doc.ops[3]);
    const [bundled, r, badSig] = await Promise.all([
      buildExample(),
      run(['build'], unbound),
      run(['build'], JSON.stringify(doc)),
    ]);
    expect(Object.keys(bundled.json().attestations)).toHaveLength(3);
    expect(r.json()).toMatchObject({
      error: 'AttestationMismatch',
      index: 3,
      length: 3,
    });
    expect(badSig.json()).toMatchObject({
      error: 'BadSignature',
      index: 0,
      length: 0,
    });
  });

  it('usage errors exit 2 with a message on stderr', async () => {
    const cases = [
      [],
      ['frobnicate'],
      ['verify', '--expect-head', 'abc'],
      ['verify', '--bogus'],
      ['verify', '--trust-key', 'abc'],
      ['verify', '--trust-key'],
      ['build', 'x'],
    ];
    const results = await Promise.all(cases.map((args) => run(args, fixture)));
    for (const [i, r] of results.entries()) {
      expect([cases[i], r.code, r.out]).toEqual([cases[i], 2, '']);
      expect(r.err).toMatch(/usage:/);
    }
  });
});
