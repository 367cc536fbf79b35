// Property tests of the attestation bundle: signing round-trips through the wire form and a trusted verify;
// any single-field change of a bundled body fails verification with the spec's code at its segment; the
// cost of a record is exactly Σ bundled active_uj + Σ idle_uj, with every unbundled segment unresolved.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { receipt } from '../test/attest-helpers.js';
import { GRANTS, UNIT } from '../test/helpers.js';
import { attestationAddress } from './attestation.js';
import { decodeAttestationBody, encodeAttestationBody } from './bundle.js';
import type { IntervalReceipt } from './host.js';
import { openRecord } from './host-record.js';
import { generateSigningKey, verifyAddressSignature } from './signature.js';
import { verifyWire } from './verify.js';

const U64_MAX = 2n ** 64n - 1n;
const hex32 = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('hex'));
const u64 = fc.oneof(fc.bigInt({ min: 0n, max: U64_MAX }), fc.constantFrom(0n, 2n ** 53n + 1n, U64_MAX));
const seed = fc.uint8Array({ minLength: 32, maxLength: 32 });
const arbReceipt: fc.Arbitrary<IntervalReceipt> = fc.record(
  {
    startedMs: u64,
    endedMs: u64,
    activeUj: u64,
    provenance: fc.constantFrom('measured', 'estimated' as const),
    meter: fc.oneof(
      fc.constantFrom('rapl', 'cgroup-cpu-model', ''),
      fc.string({ unit: 'grapheme', maxLength: 12 }),
    ),
    journalRoot: hex32,
    outcome: fc.constantFrom('succeeded', 'failed', 'yielded', 'cancelled' as const),
    exitCode: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
    auditPrev: hex32,
  },
  {
    requiredKeys: [
      'startedMs',
      'endedMs',
      'activeUj',
      'provenance',
      'meter',
      'journalRoot',
      'outcome',
      'exitCode',
    ],
  },
);

const json = <T>(v: T): T => JSON.parse(JSON.stringify(v));

describe('attestation properties', () => {
  it('sign → wire → decode → verify round-trips, and a trusted verify names the signer', () => {
    fc.assert(
      fc.property(arbReceipt, seed, (r, s) => {
        const key = generateSigningKey(s);
        const rec = openRecord({ unitId: UNIT, grantsId: GRANTS });
        const a = rec.executeInterval(r, { secretKey: key.secretKey });
        expect(verifyAddressSignature(a.address, a.body.signature!)).toBe(true);
        const wire = json(encodeAttestationBody(a.body));
        expect(decodeAttestationBody(wire)).toEqual(a.body);
        expect(attestationAddress(decodeAttestationBody(wire))).toBe(a.address);
        const v = verifyWire(json(rec.toWire()), { trustKeys: [key.publicKey], expectHead: rec.head });
        expect(v).toMatchObject({ ok: true, signedBy: [key.publicKey], cost: { activeUj: r.activeUj } });
      }),
      { numRuns: 60 },
    );
  });

  type Edit = {
    field: string;
    code: 'AttestationMismatch' | 'BadSignature';
    apply: (b: Record<string, unknown>) => void;
  };
  const other = (v: string) => (v === 'a'.repeat(64) ? 'b'.repeat(64) : 'a'.repeat(64));
  const edits: fc.Arbitrary<Edit> = fc.oneof(
    ...(['unit_id', 'grants_id', 'record_head', 'journal_root'] as const).map((field) =>
      fc.constant<Edit>({
        field,
        code: 'AttestationMismatch',
        apply: (b) => (b[field] = other(b[field] as string)),
      }),
    ),
    ...(['started_ms', 'ended_ms', 'active_uj'] as const).map((field) =>
      u64.map<Edit>((n) => ({
        field,
        code: 'AttestationMismatch',
        apply: (b) => (b[field] = String(BigInt(b[field] as string) === n ? (n === 0n ? 1n : n - 1n) : n)),
      })),
    ),
    fc.constant<Edit>({
      field: 'provenance',
      code: 'AttestationMismatch',
      apply: (b) => (b.provenance = b.provenance === 'measured' ? 'estimated' : 'measured'),
    }),
    fc.string({ maxLength: 8 }).map<Edit>((m) => ({
      field: 'meter',
      code: 'AttestationMismatch',
      apply: (b) => (b.meter = b.meter === m ? `${m}x` : m),
    })),
    fc.constant<Edit>({
      field: 'outcome',
      code: 'AttestationMismatch',
      apply: (b) => (b.outcome = b.outcome === 'failed' ? 'succeeded' : 'failed'),
    }),
    fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }).map<Edit>((n) => ({
      field: 'exit_code',
      code: 'AttestationMismatch',
      apply: (b) => (b.exit_code = b.exit_code === n ? (n === 0 ? 1 : 0) : n),
    })),
    fc.constant<Edit>({
      field: 'audit_prev',
      code: 'AttestationMismatch',
      apply: (b) => {
        if (b.audit_prev === undefined) b.audit_prev = 'c'.repeat(64);
        else delete b.audit_prev;
      },
    }),
    seed.map<Edit>((s) => ({
      field: 'signature.key',
      code: 'BadSignature',
      apply: (b) => {
        const sig = b.signature as { key: string };
        const k = generateSigningKey(s).publicKey;
        sig.key = k === sig.key ? generateSigningKey(new Uint8Array(32)).publicKey : k;
      },
    })),
    fc.nat(127).map<Edit>((at) => ({
      field: 'signature.sig',
      code: 'BadSignature',
      apply: (b) => {
        const sig = b.signature as { sig: string };
        sig.sig = sig.sig.slice(0, at) + (sig.sig[at] === '0' ? '1' : '0') + sig.sig.slice(at + 1);
      },
    })),
  );

  it('any single-field change of a bundled body fails with the spec’s code at its segment', () => {
    fc.assert(
      fc.property(
        fc.array(arbReceipt, { minLength: 1, maxLength: 3 }),
        fc.nat(),
        edits,
        seed,
        (rs, pick, edit, s) => {
          const key = generateSigningKey(s);
          const rec = openRecord({ unitId: UNIT, grantsId: GRANTS });
          const made = rs.map((r) => rec.executeInterval(r, { secretKey: key.secretKey }));
          const at = pick % made.length;
          const wire = json(rec.toWire());
          edit.apply(wire.attestations?.[made[at]!.address] as unknown as Record<string, unknown>);
          const v = verifyWire(wire);
          expect(v.ok ? 'ok' : [v.error, v.index]).toEqual([edit.code, at]);
        },
      ),
      { numRuns: 120 },
    );
  });

  it('cost = Σ bundled active_uj + Σ idle_uj, exactly; unresolved = executed segments without a body', () => {
    const step = fc.oneof(
      fc.record({ kind: fc.constant('bundled' as const), activeUj: u64, signed: fc.boolean() }),
      fc.record({ kind: fc.constant('unbundled' as const), n: fc.nat(3) }),
      fc.record({ kind: fc.constant('park' as const), idleUj: fc.bigInt({ min: 1n, max: U64_MAX }) }),
    );
    const key = generateSigningKey(new Uint8Array(32).fill(5));
    fc.assert(
      fc.property(fc.array(step, { maxLength: 8 }), (steps) => {
        const rec = openRecord({ unitId: UNIT, grantsId: GRANTS });
        let active = 0n;
        let idle = 0n;
        let unresolved = 0;
        steps.forEach((st, i) => {
          if (st.kind === 'park') {
            if (rec.phase !== 'active' || rec.segments.at(-1)?.kind !== 'executed') {
              rec.execute({ attestation: 'e'.repeat(64) }); // a park follows an executed interval
              unresolved++;
            }
            rec.suspend({ snapshot: { root: 'f'.repeat(64) }, manifest: 'd'.repeat(64) });
            rec.resume({
              snapshot: { root: 'f'.repeat(64) },
              manifest: 'd'.repeat(64),
              idleUj: st.idleUj,
              idleProvenance: 'measured',
            });
            idle += st.idleUj;
          } else if (st.kind === 'bundled') {
            rec.executeInterval(
              receipt(i, { activeUj: st.activeUj }),
              st.signed ? { secretKey: key.secretKey } : {},
            );
            active += st.activeUj;
          } else {
            rec.execute({ attestation: String(st.n).repeat(64) }); // may repeat: counted per segment
            unresolved++;
          }
        });
        const v = verifyWire(json(rec.toWire()));
        expect(v).toMatchObject({
          ok: true,
          cost: { activeUj: active, idleUj: idle, totalUj: active + idle, unresolved },
        });
      }),
      { numRuns: 150 },
    );
  });
});
