// Drives the built CLI (dist/cli.js) exactly as the conformance suite does: stdin JSON, stdout JSON, exit codes.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { addr } from './helpers.js';

const pkg = fileURLToPath(new URL('..', import.meta.url));
const cli = `${pkg}dist/cli.js`;
const ops = readFileSync(`${pkg}examples/ops.json`, 'utf8');
const fixture = readFileSync(`${pkg}examples/record.json`, 'utf8');
/** The example steward key of examples/make-ops.mjs (public: it signs the example record's bundle). */
const STEWARD = 'c5c6ab345c4cea533b76ee64e7303927a5df75d760a56c6ff9c6369a88b21499';

function run(args: string[], input: string) {
  const r = spawnSync(process.execPath, [cli, ...args], { input, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr, json: () => JSON.parse(r.stdout) };
}

beforeAll(() => {
  if (!existsSync(cli))
    throw new Error(`${cli} is missing: run \`pnpm --filter @everdict/runrecord build\` first`);
});

describe('everdict-runrecord CLI', () => {
  it('build prints the wire form (exit 0), identical to the committed fixture', () => {
    const r = run(['build'], ops);
    expect(r.code).toBe(0);
    expect(r.json()).toEqual(JSON.parse(fixture));
  });

  it('verify prints the spec summary (exit 0), with or without a matching --expect-head', () => {
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
    expect(run(['verify'], fixture).json()).toEqual(expected);
    const r = run(['verify', '--expect-head', head], fixture);
    expect([r.code, r.out.trim()]).toEqual([0, JSON.stringify(expected)]);
    expect(run(['verify', `--expect-head=${head.toUpperCase()}`], fixture).code).toBe(0);
  });

  it('verify failure: exit 1, {"ok":false,"error","index"}; index absent where no segment is to blame', () => {
    const w = JSON.parse(fixture);
    w.segments[4].snapshot = { transcript: addr(1) };
    const r = run(['verify'], JSON.stringify(w));
    expect([r.code, r.json()]).toEqual([1, { ok: false, error: 'HeadMismatch', index: 4 }]);
    const e = run(['verify', '--expect-head', addr(0)], fixture);
    expect([e.code, e.json()]).toEqual([1, { ok: false, error: 'HeadMismatch' }]);
    const m = run(['verify'], '{not json');
    expect([m.code, m.json()]).toEqual([1, { ok: false, error: 'MalformedRecord' }]);
  });

  it('build refusal: exit 1, {"error","index","length","head"} describing the record as it stood', () => {
    const doc = JSON.parse(ops);
    const ok = run(['build'], JSON.stringify({ ...doc, ops: doc.ops.slice(0, 2) })).json();
    doc.ops[2] = { ...doc.ops[2], idle_uj: '0' };
    const r = run(['build'], JSON.stringify(doc));
    expect([r.code, r.json()]).toEqual([1, { error: 'ZeroIdleEnergy', index: 2, length: 2, head: ok.head }]);
    doc.ops[2] = { op: 'jump' };
    expect(run(['build'], JSON.stringify(doc)).json()).toMatchObject({
      error: 'MalformedRecord',
      index: 2,
      length: 2,
    });
    expect(run(['build'], JSON.stringify({ unit_id: 'x', grants_id: addr(1), ops: [] })).json()).toEqual({
      error: 'MalformedRecord',
    });
    const after = run(
      ['build'],
      JSON.stringify({ ...JSON.parse(ops), ops: [...JSON.parse(ops).ops, { op: 'x' }] }),
    );
    expect(after.json()).toMatchObject({ error: 'RecordClosed', index: 8, length: 8 });
  });

  it('inspect prints a table (index, kind, head prefix, snapshot form, idle energy, account)', () => {
    const r = run(['inspect'], fixture);
    expect(r.code).toBe(0);
    expect(r.out).toContain('verifies from genesis');
    expect(r.out).toMatch(/#\s+kind\s+head\s+snapshot\s+idle energy\s+attestation\s+account/);
    expect(r.out).toContain('cost    72.136400 J = active 70.800000 J + idle 1.336400 J');
    expect(r.out).toContain(`signed  ${STEWARD}`);
    expect(r.out).toMatch(/0\s+executed\s+[0-9a-f]{12}\s+—\s+—\s+48,200,000 µJ yielded, signed c5c6ab345c4c/);
    expect(r.out).toMatch(/2\s+resumed\s+[0-9a-f]{12}\s+image\+memory\s+1,250,000 µJ measured/);
    expect(r.out).toMatch(/4\s+suspended\s+[0-9a-f]{12}\s+transcript/);
    expect(r.out).toContain('dispatched review#2 · resolved build#1');
    const w = JSON.parse(fixture);
    w.segments[3].attestation = addr(5);
    const bad = run(['inspect'], JSON.stringify(w));
    expect(bad.code).toBe(1);
    expect(bad.out).toContain('FAILS verification: HeadMismatch at segment 3');
  });

  it('verify --trust-key (repeatable, either case): trusted → exit 0; untrusted → UntrustedAttestation', () => {
    const other = addr(7);
    expect(run(['verify', '--trust-key', other, '--trust-key', STEWARD.toUpperCase()], fixture).code).toBe(0);
    expect(run(['verify', `--trust-key=${STEWARD}`], fixture).json()).toMatchObject({
      ok: true,
      signed_by: [STEWARD],
    });
    const r = run(['verify', '--trust-key', other], fixture);
    expect([r.code, r.json()]).toEqual([1, { ok: false, error: 'UntrustedAttestation', index: 0 }]);
    const w = JSON.parse(fixture);
    const first = Object.keys(w.attestations)[0] as string;
    w.attestations[first].active_uj = '1';
    expect(run(['verify'], JSON.stringify(w)).json()).toEqual({
      ok: false,
      error: 'AttestationMismatch',
      index: 0,
    });
    w.attestations = null;
    expect(run(['verify'], JSON.stringify(w)).json()).toEqual({ ok: false, error: 'MalformedRecord' });
  });

  it('build with body: bundles it, or refuses a body that is not bound here', () => {
    const doc = JSON.parse(ops);
    expect(Object.keys(run(['build'], ops).json().attestations)).toHaveLength(3);
    doc.ops[3].body = doc.ops[0].body; // bound to position 0
    expect(run(['build'], JSON.stringify(doc)).json()).toMatchObject({
      error: 'AttestationMismatch',
      index: 3,
      length: 3,
    });
    doc.ops[3] = {
      ...doc.ops[0],
      body: { ...doc.ops[0].body, signature: { ...doc.ops[0].body.signature, key: addr(3) } },
    };
    doc.ops.splice(0, 3, doc.ops[3]);
    expect(run(['build'], JSON.stringify(doc)).json()).toMatchObject({
      error: 'BadSignature',
      index: 0,
      length: 0,
    });
  });

  it('usage errors exit 2 with a message on stderr', () => {
    for (const args of [
      [],
      ['frobnicate'],
      ['verify', '--expect-head', 'abc'],
      ['verify', '--bogus'],
      ['verify', '--trust-key', 'abc'],
      ['verify', '--trust-key'],
      ['build', 'x'],
    ]) {
      const r = run(args, fixture);
      expect(r.code).toBe(2);
      expect(r.out).toBe('');
      expect(r.err).toMatch(/usage:/);
    }
  });
});
