import { describe, expect, it } from 'vitest';
import { accountVerdict } from './account.js';
import { referenceBuild } from './build.js';
import { ascii, concat, fromHex, H, str, toHex, u32, u64 } from './bytes.js';
import { genesis, genesisPreimage } from './chain.js';
import { segBytes, snapshotForm } from './segment.js';
import { referenceVerify } from './verify.js';

const A = 'aa'.repeat(32);
const B = 'bb'.repeat(32);
const R = '11'.repeat(32);
const M = '22'.repeat(32);
const T = '33'.repeat(32);
const F = '44'.repeat(32);
const hex = (s: string) => s.replaceAll(' ', '');

describe('primitives', () => {
  it('BLAKE3-256 matches the official vectors', () => {
    expect(toHex(H(new Uint8Array()))).toBe(
      'af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262',
    );
    expect(toHex(H(ascii('abc')))).toBe('6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85');
  });

  it('encodes u32, u64 big-endian and str as u32 byte length ‖ UTF-8', () => {
    expect(toHex(u32(258))).toBe('00000102');
    expect(toHex(u64(1_250_000n))).toBe('00000000001312d0');
    expect(toHex(u64((1n << 64n) - 1n))).toBe('ffffffffffffffff');
    expect(toHex(str('c1'))).toBe('000000026331');
    expect(toHex(str('appel-é'))).toBe('00000008617070656c2dc3a9');
  });
});

describe('genesis', () => {
  it('is H("sandbox.runrecord/1" ‖ unit_id ‖ grants_id)', () => {
    const tag = '73616e64626f782e72756e7265636f72642f31'; // "sandbox.runrecord/1", 19 bytes
    expect(toHex(genesisPreimage(A, B))).toBe(tag + A + B);
    expect(genesis(A, B)).toBe(toHex(H(fromHex(tag + A + B))));
    expect(genesis(A, B)).not.toBe(genesis(B, A));
  });
});

describe('segment bytes', () => {
  it('executed, with and without an account', () => {
    expect(toHex(segBytes({ kind: 'executed', attestation: A }))).toBe(`01${A}`);
    expect(
      toHex(segBytes({ kind: 'executed', attestation: A, account: { dispatched: [], resolved: [] } })),
    ).toBe(hex(`01 ${A} ac 00000000 00000000`));
    const account = { dispatched: ['c1', 'c2'], resolved: ['c0'] };
    expect(toHex(segBytes({ kind: 'executed', attestation: A, account }))).toBe(
      hex(`01 ${A} ac 00000002 00000002 6331 00000002 6332 00000001 00000002 6330`),
    );
  });

  it('suspended: the image form, with and without memory, and the transcript form', () => {
    const s = (snapshot: object) => toHex(segBytes({ kind: 'suspended', snapshot, manifest: F }));
    expect(s({ root: R })).toBe(hex(`02 01 ${R} 00 ${F}`));
    expect(s({ root: R, memory: M })).toBe(hex(`02 01 ${R} 01 ${M} ${F}`));
    expect(s({ transcript: T })).toBe(hex(`02 02 ${T} ${F}`));
    expect(s({ transcript: R })).not.toBe(s({ root: R }));
  });

  it('resumed: snap ‖ manifest ‖ u64 idle ‖ u8 provenance', () => {
    const bytes = segBytes({
      kind: 'resumed',
      snapshot: { root: R },
      manifest: F,
      idle_uj: '4000',
      idle_provenance: 'measured',
    });
    expect(toHex(bytes)).toBe(hex(`03 01 ${R} 00 ${F} 0000000000000fa0 01`));
  });

  it('closed: 04 ‖ reason', () => {
    const reasons = ['completed', 'abandoned', 'failed', 'cancelled'] as const;
    expect(reasons.map((reason) => toHex(segBytes({ kind: 'closed', reason })))).toEqual([
      '0401',
      '0402',
      '0403',
      '0404',
    ]);
  });

  it('refuses to encode the three malformed references', () => {
    expect(snapshotForm({})).toBe('malformed');
    expect(snapshotForm({ memory: M })).toBe('malformed');
    expect(snapshotForm({ root: R, transcript: T })).toBe('malformed');
    expect(snapshotForm({ transcript: T, memory: M })).toBe('malformed');
    expect(() => segBytes({ kind: 'suspended', snapshot: { memory: M }, manifest: F })).toThrow();
  });
});

describe('chain, build and verify', () => {
  const ops = [
    { op: 'execute', attestation: A },
    { op: 'suspend', snapshot: { transcript: T }, manifest: F },
    { op: 'resume', snapshot: { transcript: T }, manifest: F, idle_uj: '9', idle_provenance: 'estimated' },
  ];

  it('advances head by head and verifies its own record', () => {
    const out = referenceBuild({ unit_id: A, grants_id: B, ops });
    if (!('built' in out)) throw new Error('expected a record');
    const h1 = toHex(H(concat(fromHex(genesis(A, B)), fromHex(`01${A}`))));
    expect(out.built.segments[0]?.head).toBe(h1);
    expect(referenceVerify(out.built)).toEqual({
      ok: true,
      head: out.built.head,
      length: 3,
      idle_uj: '9',
      account: 'no_verdict',
      phase: 'active',
      cost: { active_uj: '0', idle_uj: '9', total_uj: '9', unresolved: 1 },
      signed_by: [],
    });
  });

  it('refuses a zero-idle resume and reports the record unchanged', () => {
    const zero = [...ops.slice(0, 2), { ...ops[2], idle_uj: '0' }];
    const out = referenceBuild({ unit_id: A, grants_id: B, ops: zero });
    const two = referenceBuild({ unit_id: A, grants_id: B, ops: ops.slice(0, 2) });
    if (!('built' in two)) throw new Error('expected a record');
    expect(out).toEqual({ refused: { error: 'ZeroIdleEnergy', index: 2, length: 2, head: two.built.head } });
  });
});

describe('account verdict', () => {
  const E = (dispatched: string[], resolved: string[]) =>
    ({ kind: 'executed', attestation: A, account: { dispatched, resolved } }) as const;
  it('follows the precedence no_verdict > unreadable > blocking', () => {
    expect(accountVerdict([E(['c1'], []), E([], ['c1'])]).verdict).toBe('non_blocking');
    expect(accountVerdict([E(['c1'], ['c1'])])).toEqual({ verdict: 'blocking', index: 0, call: 'c1' });
    expect(accountVerdict([E(['c1'], ['c1']), E([], ['c9'])])).toEqual({
      verdict: 'unreadable',
      index: 1,
      call: 'c9',
    });
    expect(accountVerdict([E(['c1'], ['c1']), { kind: 'executed', attestation: A }]).verdict).toBe(
      'no_verdict',
    );
    expect(accountVerdict([]).verdict).toBe('no_verdict');
  });
});
