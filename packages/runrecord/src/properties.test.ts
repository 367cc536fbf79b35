// Property tests: valid operation sequences verify and host and verifier agree; a random (often invalid)
// operation is refused exactly as an independent model predicts and leaves the record unchanged; any
// single-character flip of any field of a wire record is detected; encode ∘ decode is the identity.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addr, GRANTS, UNIT } from '../test/helpers.js';
import { accountVerdict } from './accounts.js';
import { idleEnergy } from './energy.js';
import { isRunRecordError } from './errors.js';
import type { Operation } from './host.js';
import { type HostRecord, openRecord } from './host-record.js';
import type { SnapshotInput } from './types.js';
import { Verifier, verifyRecord, verifyWire } from './verify.js';
import { decodeWire, encodeWire } from './wire.js';

const hexAddr = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('hex'));
const smallAddr = fc.integer({ min: 1, max: 3 }).map(addr); // collisions on purpose
const snapshot: fc.Arbitrary<SnapshotInput> = fc.oneof(
  fc.record({ root: smallAddr }),
  fc.record({ root: smallAddr, memory: smallAddr }),
  fc.record({ transcript: smallAddr }),
);
const callId = fc.oneof(fc.constantFrom('c1', 'c2', 'c3', 'c4'), fc.string({ maxLength: 6 }));
const account = fc.option(
  fc.record({ dispatched: fc.array(callId, { maxLength: 3 }), resolved: fc.array(callId, { maxLength: 3 }) }),
  {
    nil: undefined,
  },
);
const idle = fc.oneof(fc.bigInt({ min: 1n, max: 10n ** 7n }), fc.constant(2n ** 64n - 1n));
const reason = fc.constantFrom('completed', 'abandoned', 'failed', 'cancelled' as const);

/** Builds a valid sequence: each step picks among the ops the current phase allows. */
const validOps = fc
  .array(
    fc.record({
      pick: fc.nat(),
      att: hexAddr,
      account,
      snapshot,
      manifest: smallAddr,
      idle,
      reason,
      closeAt: fc.nat(40),
    }),
    { maxLength: 30 },
  )
  .map((steps) => {
    const ops: Operation[] = [];
    let last = 'genesis';
    let park: { snapshot: SnapshotInput; manifest: string } | undefined;
    for (const s of steps) {
      if (last === 'closed') break;
      const allowed =
        last === 'suspended'
          ? ['resume', 'close']
          : last === 'executed'
            ? ['execute', 'suspend', 'close']
            : ['execute'];
      const op = s.closeAt === 0 ? 'close' : allowed[s.pick % allowed.length]!;
      if (op === 'execute')
        ops.push({ op, attestation: s.att, ...(s.account ? { account: s.account } : {}) });
      if (op === 'suspend') {
        park = { snapshot: s.snapshot, manifest: s.manifest };
        ops.push({ op, ...park });
      }
      if (op === 'resume')
        ops.push({ op, ...park!, idleUj: s.idle, idleProvenance: s.pick % 2 ? 'measured' : 'estimated' });
      if (op === 'close') ops.push({ op, reason: s.reason });
      last = { execute: 'executed', suspend: 'suspended', resume: 'resumed', close: 'closed' }[op]!;
    }
    return ops;
  });

function hostFrom(ops: Operation[]): HostRecord {
  const r = openRecord({ unitId: UNIT, grantsId: GRANTS });
  for (const op of ops) r.apply(op);
  return r;
}

describe('properties', () => {
  it('random valid operation sequences verify, and host and verifier agree on everything', () => {
    fc.assert(
      fc.property(validOps, (ops) => {
        const r = hostFrom(ops);
        const rec = r.toRecord();
        const v = verifyRecord(rec);
        const idleUj = idleEnergy(rec.segments);
        const executed = rec.segments.filter((s) => s.kind === 'executed').length;
        expect(v).toEqual({
          ok: true,
          head: r.head,
          length: ops.length,
          phase: r.phase,
          idleUj,
          account: accountVerdict(rec.segments),
          cost: { activeUj: 0n, idleUj, totalUj: idleUj, unresolved: executed },
          signedBy: [],
        });
        const streaming = new Verifier(rec);
        for (const s of rec.segments) streaming.push(s);
        expect(streaming.finish({ expectHead: r.head })).toEqual(v);
        expect(verifyWire(JSON.parse(JSON.stringify(r.toWire())))).toEqual(v);
      }),
      { numRuns: 300 },
    );
  });

  it('a random next operation is refused exactly as an independent model predicts, leaving the record unchanged', () => {
    const anySnapshot = fc.record(
      { root: fc.oneof(smallAddr, fc.constant('XYZ')), memory: smallAddr, transcript: smallAddr },
      { requiredKeys: [] },
    );
    const anyOp: fc.Arbitrary<Operation> = fc.oneof(
      fc.record({ op: fc.constant('execute' as const), attestation: fc.oneof(hexAddr, fc.constant('00')) }),
      fc.record({ op: fc.constant('suspend' as const), snapshot: anySnapshot, manifest: smallAddr }),
      fc.record({
        op: fc.constant('resume' as const),
        snapshot: anySnapshot,
        manifest: smallAddr,
        idleUj: fc.oneof(fc.constant(0n), fc.constant(2n ** 64n), fc.bigInt({ min: 1n, max: 99n })),
        idleProvenance: fc.constant('measured' as const),
      }),
      fc.record({ op: fc.constant('close' as const), reason }),
    );
    fc.assert(
      fc.property(validOps, anyOp, (ops, op) => {
        const r = hostFrom(ops);
        const expected = predict(r, op);
        const before = [r.head, r.length, r.phase];
        let code: string | null = null;
        try {
          r.apply(op);
        } catch (e) {
          if (!isRunRecordError(e)) throw e;
          code = e.code;
          expect(e.index).toBe(before[1]);
        }
        expect(code).toBe(expected);
        if (code) expect([r.head, r.length, r.phase]).toEqual(before);
        else expect(verifyRecord(r.toRecord()).ok).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it('flipping any one character of any field of a wire record is detected (never ok)', () => {
    fc.assert(
      fc.property(validOps, fc.nat(), fc.nat(), fc.nat(), (ops, f, p, c) => {
        const wire = JSON.parse(JSON.stringify(hostFrom(ops).toWire()));
        const fields = stringFields(wire);
        const [holder, key] = fields[f % fields.length]!;
        const value = holder[key] as string;
        if (value.length === 0) return;
        const pos = p % value.length;
        const alphabet = /^[0-9a-f]{64}$/.test(value)
          ? '0123456789abcdef'
          : 'abcdefghijklmnopqrstuvwxyz0123456789_-/.é';
        const choices = [...alphabet].filter((ch) => ch !== value[pos]);
        holder[key] = value.slice(0, pos) + choices[c % choices.length]! + value.slice(pos + 1);
        const result = verifyWire(wire);
        expect(result.ok).toBe(false);
      }),
      { numRuns: 600 },
    );
  });

  it('encode ∘ decode and decode ∘ encode are the identity', () => {
    fc.assert(
      fc.property(validOps, (ops) => {
        const rec = hostFrom(ops).toRecord();
        const wire = JSON.parse(JSON.stringify(encodeWire(rec)));
        expect(decodeWire(wire)).toEqual(rec);
        expect(encodeWire(decodeWire(wire))).toEqual(wire);
      }),
      { numRuns: 200 },
    );
  });
});

type Holder = Record<string, unknown>;
function stringFields(node: unknown, out: [Holder, string][] = []): [Holder, string][] {
  if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (typeof v === 'string') out.push([node as Holder, k]);
      else stringFields(v, out);
    }
  }
  return out;
}

/** An independent statement of the spec's order of checks for one host append. */
function predict(r: HostRecord, op: Operation): string | null {
  if (r.phase === 'closed') return 'RecordClosed';
  const isHex = (x: unknown) => typeof x === 'string' && /^[0-9a-f]{64}$/.test(x);
  if (op.op === 'execute' && !isHex(op.attestation)) return 'MalformedRecord';
  if (op.op === 'suspend' || op.op === 'resume') {
    const s = op.snapshot;
    if (![s.root, s.memory, s.transcript].every((x) => x === undefined || isHex(x))) return 'MalformedRecord';
    if (op.op === 'resume' && op.idleUj > 2n ** 64n - 1n) return 'MalformedRecord';
    const hasRoot = s.root !== undefined;
    const hasT = s.transcript !== undefined;
    if (hasRoot === hasT || (hasT && s.memory !== undefined)) return 'MalformedSnapshot';
  }
  const last = r.segments.at(-1)?.kind ?? 'genesis';
  const ok = {
    execute: last !== 'suspended',
    suspend: last === 'executed',
    resume: last === 'suspended',
    close: true,
  }[op.op];
  if (!ok) return 'PhaseViolation';
  if (op.op === 'resume') {
    const p = r.parkedAt!;
    if (
      p.snapshot.root !== op.snapshot.root ||
      p.snapshot.memory !== op.snapshot.memory ||
      p.snapshot.transcript !== op.snapshot.transcript
    ) {
      return 'SnapshotMismatch';
    }
    if (p.manifest !== op.manifest) return 'ManifestMismatch';
    if (op.idleUj === 0n) return 'ZeroIdleEnergy';
  }
  return null;
}
