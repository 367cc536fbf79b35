// Verifying a record with an attestation bundle: rules 6–9 in their place in the order of checks, the
// "Precise readings" of the spec, cost and signed_by — through the wire path, the decoded path and the
// streaming byte path alike.
import { describe, expect, it } from 'vitest';
import {
  bundledRecord,
  forgeWire,
  IDENTITY_SIG,
  KEY_1,
  KEY_2,
  SMALL_ORDER_KEYS,
  signedAt,
  wireOf,
} from '../test/attest-helpers.js';
import { addr, closed, exec, GRANTS, image, res, susp, UNIT } from '../test/helpers.js';
import { encodeAttestationBody } from './bundle.js';
import { hexToBytes } from './bytes.js';
import { segmentBytes } from './segment.js';
import { Verifier, type VerifyOptions, type VerifyResult, verifyRecord, verifyWire } from './verify.js';
import { decodeWire, encodeWire } from './wire.js';

type Json = ReturnType<typeof forgeWire>;
type Entry = Record<string, unknown>;

const outcome = (r: VerifyResult) => (r.ok ? 'ok' : { error: r.error, index: r.index });

/** verifyWire, and — where the record decodes — verifyRecord and the streaming byte path, must agree. */
function check(wire: unknown, options: VerifyOptions = {}): VerifyResult {
  const r = verifyWire(wire, options);
  let decoded: ReturnType<typeof decodeWire> | undefined;
  try {
    decoded = decodeWire(wire);
  } catch {
    decoded = undefined;
  }
  if (decoded !== undefined) {
    expect(outcome(verifyRecord(decoded, options))).toEqual(outcome(r));
    const v = new Verifier(decoded, { attestations: decoded.attestations, trustKeys: options.trustKeys });
    for (const s of decoded.segments) if (!v.pushBytes(segmentBytes(s), hexToBytes(s.head))) break;
    expect(v.finish({ head: decoded.head, expectHead: options.expectHead })).toEqual(r);
  }
  return r;
}

function fails(wire: unknown, error: string, index: number | undefined, options: VerifyOptions = {}) {
  expect(outcome(check(wire, options))).toEqual({ error, index });
}

const firstEntry = (w: Json): Entry => Object.values(w.attestations)[0] as Entry;
const edited = (w: Json, edit: (e: Entry) => void): Json => {
  const copy = structuredClone(w);
  edit(firstEntry(copy));
  return copy;
};

describe('a record with a bundle', () => {
  it('verifies, with cost (exact, unresolved counting segments) and signers', () => {
    const { record, bodies } = bundledRecord();
    const r = check(wireOf(record));
    const active = bodies[0].body.activeUj + bodies[1].body.activeUj;
    expect(r).toMatchObject({
      ok: true,
      idleUj: 700n,
      cost: { activeUj: active, idleUj: 700n, totalUj: active + 700n, unresolved: 1 },
      signedBy: [KEY_1.publicKey],
    });
  });

  it('without a bundle: no active energy, every executed segment unresolved (the same address twice too)', () => {
    const w = forgeWire([exec(1), exec(1), susp(image(2)), res(image(2), 5n)]);
    const { attestations: _none, ...bare } = w;
    expect(check(bare)).toMatchObject({
      ok: true,
      cost: { activeUj: 0n, idleUj: 5n, totalUj: 5n, unresolved: 2 },
      signedBy: [],
    });
    expect(check({ ...bare, attestations: {} })).toMatchObject({ ok: true, cost: { unresolved: 2 } });
  });

  it('sums past 2^64 − 1 exactly', () => {
    const max = 2n ** 64n - 1n;
    const w = forgeWire([
      (h) => ({ body: signedAt(h, 1, null, { activeUj: max }) }),
      (h) => ({ body: signedAt(h, 2, null, { activeUj: max }) }),
      susp(image(2)),
      res(image(2), max),
    ]);
    expect(check(w)).toMatchObject({
      ok: true,
      cost: { activeUj: 2n * max, idleUj: max, totalUj: 3n * max, unresolved: 0 },
    });
  });

  it('lists distinct signers in first-seen order', () => {
    const w = forgeWire([
      (h) => ({ body: signedAt(h, 1, KEY_2) }),
      (h) => ({ body: signedAt(h, 2, null) }),
      (h) => ({ body: signedAt(h, 3, KEY_1) }),
      (h) => ({ body: signedAt(h, 4, KEY_2) }),
    ]);
    expect(check(w)).toMatchObject({ ok: true, signedBy: [KEY_2.publicKey, KEY_1.publicKey] });
  });
});

describe('rules 6 and 7: a body is bound to its segment', () => {
  it('an edited field no longer hashes to the address: AttestationMismatch at the naming segment', () => {
    const { record } = bundledRecord();
    const w = wireOf(record) as Json;
    fails(
      edited(w, (e) => {
        e.active_uj = '1';
      }),
      'AttestationMismatch',
      0,
    );
  });

  it('cannot be moved to another record (unit, grant set) or another position', () => {
    const otherUnit = forgeWire([(h) => ({ body: signedAt(h, 1, KEY_1, { unitId: addr(0x55) }) })]);
    fails(otherUnit, 'AttestationMismatch', 0);
    const otherGrants = forgeWire([(h) => ({ body: signedAt(h, 1, KEY_1, { grantsId: addr(0x56) }) })]);
    fails(otherGrants, 'AttestationMismatch', 0);
    let first = '';
    const moved = forgeWire([
      exec(9),
      (h) => {
        first = h;
        return { body: signedAt(h, 1) };
      },
      (_h) => ({ body: signedAt(first, 2) }), // bound to the position before
    ]);
    fails(moved, 'AttestationMismatch', 2);
  });

  it('cannot be replayed: a second segment naming the same bundled address fails at the second', () => {
    let body = signedAt(addr(0), 1);
    const w = forgeWire([
      (h) => {
        body = signedAt(h, 1);
        return { body };
      },
      susp(image(2)),
      res(image(2)),
      () => ({ body }),
    ]);
    fails(w, 'AttestationMismatch', 3);
  });
});

describe('rules 8 and 9: signatures and trust', () => {
  const signedTwice = () =>
    forgeWire([(h) => ({ body: signedAt(h, 1, KEY_1) }), (h) => ({ body: signedAt(h, 2, KEY_1) })]);

  it('a signature that does not verify is BadSignature; a missing one is fine without trusted keys', () => {
    const w = signedTwice();
    const sig = (firstEntry(w).signature as { sig: string }).sig;
    const flipped = `${sig.slice(0, 10)}${sig[10] === '0' ? '1' : '0'}${sig.slice(11)}`;
    fails(
      edited(w, (e) => Object.assign(e.signature as object, { sig: flipped })),
      'BadSignature',
      0,
    );
    fails(
      edited(w, (e) => Object.assign(e.signature as object, { key: KEY_2.publicKey })),
      'BadSignature',
      0,
    );
    const stripped = edited(w, (e) => {
      delete e.signature;
    });
    expect(check(stripped)).toMatchObject({ ok: true, signedBy: [KEY_1.publicKey] });
    fails(stripped, 'UntrustedAttestation', 0, { trustKeys: [KEY_1.publicKey] });
  });

  it('small-order keys never verify (identity signature, every small-order point)', () => {
    for (const key of SMALL_ORDER_KEYS) {
      const w = forgeWire([
        (h) => ({ body: { ...signedAt(h, 1, null), signature: { alg: 'ed25519', key, sig: IDENTITY_SIG } } }),
      ]);
      fails(w, 'BadSignature', 0);
    }
  });

  it('with trusted keys: every executed segment bundled and signed by one of them', () => {
    const w = signedTwice();
    expect(check(w, { trustKeys: [KEY_1.publicKey.toUpperCase()] })).toMatchObject({ ok: true });
    expect(check(w, { trustKeys: [KEY_2.publicKey, KEY_1.publicKey] })).toMatchObject({ ok: true });
    fails(w, 'UntrustedAttestation', 0, { trustKeys: [KEY_2.publicKey] });
    fails(w, 'UntrustedAttestation', 0, { trustKeys: [] }); // an empty list trusts nobody
    const unbundled = forgeWire([(h) => ({ body: signedAt(h, 1, KEY_1) }), exec(3)]);
    fails(unbundled, 'UntrustedAttestation', 1, { trustKeys: [KEY_1.publicKey] });
    const unsigned = forgeWire([(h) => ({ body: signedAt(h, 1, null) })]);
    fails(unsigned, 'UntrustedAttestation', 0, { trustKeys: [KEY_1.publicKey] });
    expect(() => verifyWire(w, { trustKeys: ['nope'] })).toThrow(
      expect.objectContaining({ code: 'InvalidKey' }),
    );
  });

  it('rule 8 precedes rule 9: a bad signature by an untrusted key is BadSignature', () => {
    const w = forgeWire([
      (h) => ({
        body: {
          ...signedAt(h, 1, KEY_2),
          signature: { alg: 'ed25519', key: KEY_2.publicKey, sig: '00'.repeat(64) },
        },
      }),
    ]);
    fails(w, 'BadSignature', 0, { trustKeys: [KEY_1.publicKey] });
  });

  it('rule 7 precedes rule 8: a body bound elsewhere with a bad signature is AttestationMismatch', () => {
    const w = forgeWire([
      exec(9),
      () => ({
        body: {
          ...signedAt(addr(0x01), 1, null),
          signature: { alg: 'ed25519', key: KEY_1.publicKey, sig: '00'.repeat(64) },
        },
      }),
    ]);
    fails(w, 'AttestationMismatch', 1);
  });
});

describe('precise readings: malformed bundles and bodies', () => {
  const base = () => forgeWire([exec(9), (h) => ({ body: signedAt(h, 1) }), closed()]);

  it('attestations must be an object: null, a list or a string is MalformedRecord with no index', () => {
    const w = base();
    for (const bad of [null, [], 'x', 1]) fails({ ...w, attestations: bad }, 'MalformedRecord', undefined);
  });

  it('a body with an unknown, missing or mistyped field is MalformedRecord at its naming segment', () => {
    const w = base();
    const cases: ((e: Entry) => void)[] = [
      (e) => Object.assign(e, { extra: 1 }),
      (e) => Object.assign(e, { audit_prev: null }),
      (e) => delete e.meter,
      (e) => Object.assign(e, { started_ms: '18446744073709551616' }),
      (e) => Object.assign(e, { ended_ms: '01' }),
      (e) => Object.assign(e, { active_uj: 8400000 }),
      (e) => Object.assign(e, { exit_code: 2 ** 31 }),
      (e) => Object.assign(e, { exit_code: -(2 ** 31) - 1 }),
      (e) => Object.assign(e, { exit_code: 1.5 }),
      (e) => Object.assign(e, { exit_code: '0' }),
      (e) => Object.assign(e, { outcome: 'done' }),
      (e) => Object.assign(e, { provenance: 'guessed' }),
      (e) => Object.assign(e, { journal_root: 'AB'.repeat(32) }),
      (e) => Object.assign(e, { signature: null }),
      (e) => Object.assign(e.signature as object, { alg: 'EdDSA' }),
      (e) => Object.assign(e.signature as object, { extra: true }),
      (e) => Object.assign(e.signature as object, { key: 'ab'.repeat(31) }),
      (e) => Object.assign(e.signature as object, { sig: 'ab'.repeat(63) }),
      (e) => delete (e.signature as Entry).sig,
    ];
    for (const edit of cases) fails(edited(w, edit), 'MalformedRecord', 1);
  });

  it('exit_code at both ends of i32 and u64 max are well formed (and hash differently)', () => {
    for (const over of [{ exitCode: -(2 ** 31) }, { exitCode: 2 ** 31 - 1 }, { endedMs: 2n ** 64n - 1n }]) {
      expect(check(forgeWire([(h) => ({ body: signedAt(h, 1, KEY_1, over) })]))).toMatchObject({ ok: true });
    }
  });

  it('a malformed body is checked after its segment’s head and phase', () => {
    const w = forgeWire([exec(1), susp(image(2)), (h) => ({ body: signedAt(h, 1) })]);
    fails(
      edited(w, (e) => Object.assign(e, { extra: 1 })),
      'PhaseViolation',
      2,
    );
    const h = structuredClone(base());
    (h.segments[1] as Entry).head = addr(0);
    fails(
      edited(h, (e) => Object.assign(e, { extra: 1 })),
      'HeadMismatch',
      1,
    );
  });

  it('an entry no executed segment names: MalformedRecord, no index, after the last segment and before the head field', () => {
    const w = base();
    const orphan = { ...w, attestations: { ...w.attestations, [addr(0x99)]: firstEntry(w) } };
    fails(orphan, 'MalformedRecord', undefined);
    fails({ ...w, attestations: { ...w.attestations, [addr(0x99)]: null } }, 'MalformedRecord', undefined);
    fails({ ...w, attestations: { ...w.attestations, XYZ: {} } }, 'MalformedRecord', undefined);
    fails({ ...orphan, head: addr(0) }, 'MalformedRecord', undefined);
    fails(orphan, 'MalformedRecord', undefined, { expectHead: addr(0) });
    const segmentFirst = structuredClone(orphan);
    (segmentFirst.segments[2] as Entry).reason = 'failed';
    fails(segmentFirst, 'HeadMismatch', 2);
    fails(orphan, 'UntrustedAttestation', 0, { trustKeys: [KEY_1.publicKey] });
  });

  it('"__proto__" is an entry like any other (named by no segment)', () => {
    const w = base();
    const text = JSON.stringify(w).replace('"attestations":{', '"attestations":{"__proto__":{},');
    fails(JSON.parse(text), 'MalformedRecord', undefined);
  });
});

describe('the wire form round trip', () => {
  it('decode ∘ encode keeps the bundle (an empty one too) and no bundle stays none', () => {
    const { record } = bundledRecord();
    const w = wireOf(record);
    expect(JSON.parse(JSON.stringify(encodeWire(decodeWire(w))))).toEqual(w);
    const bare = forgeWire([exec(1)]);
    expect(encodeWire(decodeWire({ ...bare, attestations: {} })).attestations).toEqual({});
    const { attestations: _a, ...none } = bare;
    expect('attestations' in encodeWire(decodeWire(none))).toBe(false);
  });

  it('decodeWire blames a malformed entry on its first naming segment, an orphan on none', () => {
    const w = forgeWire([exec(9), (h) => ({ body: signedAt(h, 1) })]);
    expect(() => decodeWire(edited(w, (e) => Object.assign(e, { x: 1 })))).toThrow(
      expect.objectContaining({ code: 'MalformedRecord', index: 1 }),
    );
    const orphan = {
      ...w,
      attestations: { ...w.attestations, [addr(3)]: encodeAttestationBody(signedAt(addr(3))) },
    };
    expect(() => decodeWire(orphan)).toThrow(
      expect.objectContaining({ code: 'MalformedRecord', index: undefined }),
    );
  });

  it('a verifier given decoded bodies checks them like wire ones (a body that cannot encode is malformed)', () => {
    const w = forgeWire([(h) => ({ body: signedAt(h, 1) })]);
    const rec = decodeWire(w);
    const [address, body] = [...(rec.attestations ?? new Map())][0]!;
    const bad = { ...rec, attestations: new Map([[address, { ...body, exitCode: 0.5 }]]) };
    expect(outcome(verifyRecord(bad))).toEqual({ error: 'MalformedRecord', index: 0 });
    const badSig = {
      ...rec,
      attestations: new Map([[address, { ...body, signature: { alg: 'ed25519', key: KEY_1.publicKey } }]]),
    };
    expect(outcome(verifyRecord(badSig as typeof rec))).toEqual({ error: 'MalformedRecord', index: 0 });
    expect(UNIT).not.toBe(GRANTS);
  });
});
