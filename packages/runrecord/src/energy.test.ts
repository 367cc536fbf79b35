import { blake3 as noble } from '@noble/hashes/blake3.js';
import { describe, expect, it } from 'vitest';
import {
  addr,
  ascii,
  closed,
  concat,
  exec,
  forge,
  hexBytes,
  image,
  res,
  susp,
  transcript,
} from '../test/helpers.js';
import {
  type Attestation,
  type AttestationStore,
  attestationAddress,
  attestationBytes,
  buildAttestation,
  MemoryAttestationStore,
} from './attestation.js';
import { idleEnergy, runCost } from './energy.js';

const ATT: Attestation = {
  unitId: addr(0x11),
  grantsId: addr(0x22),
  recordHead: addr(0x33),
  startedMs: 1_764_547_200_000n,
  endedMs: 1_764_547_295_000n,
  activeUj: 48_200_000n,
  provenance: 'measured',
  meter: 'rapl',
  journalRoot: addr(0x44),
  outcome: 'yielded',
  exitCode: -2,
};
const u64 = (v: bigint) => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, v);
  return b;
};

describe('attestations', () => {
  it('canonical bytes follow the spec layout exactly', () => {
    const expected = concat(
      ascii('sandbox.attestation/1'),
      hexBytes(addr(0x11)),
      hexBytes(addr(0x22)),
      hexBytes(addr(0x33)),
      u64(ATT.startedMs),
      u64(ATT.endedMs),
      u64(ATT.activeUj),
      [0x01, 0, 0, 0, 4],
      ascii('rapl'),
      hexBytes(addr(0x44)),
      [0x03, 0xff, 0xff, 0xff, 0xfe, 0x00],
    );
    expect(ascii('sandbox.attestation/1').length).toBe(21);
    expect(attestationBytes(ATT)).toEqual(expected);
    const withPrev = attestationBytes({ ...ATT, auditPrev: addr(0x55) });
    expect(withPrev.slice(-33)).toEqual(concat([0x01], hexBytes(addr(0x55))));
    expect(attestationAddress(ATT)).toBe(Buffer.from(noble(expected)).toString('hex'));
  });

  it('refuses fields that cannot be encoded with InvalidAttestation', () => {
    for (const bad of [
      { exitCode: 2 ** 31 },
      { exitCode: 1.5 },
      { activeUj: -1n },
      { startedMs: 2n ** 64n },
      { meter: '\ud800' },
      { outcome: 'ok' },
      { journalRoot: 'x' },
      { auditPrev: '' },
    ]) {
      expect(() => buildAttestation({ ...ATT, ...bad } as Attestation)).toThrow(
        expect.objectContaining({ code: 'InvalidAttestation' }),
      );
    }
  });
});

describe('energy', () => {
  it('idle energy is the sum over resumed segments, beyond u64 without overflow', () => {
    const max = 2n ** 64n - 1n;
    const rec = forge([
      exec(1),
      susp(image(2)),
      res(image(2), max),
      exec(3),
      susp(transcript(4)),
      res(transcript(4), 5n),
    ]);
    expect(idleEnergy(rec.segments)).toBe(max + 5n);
    expect(idleEnergy([])).toBe(0n);
  });

  it('total cost = Σ active_uj (resolved from the store, each attestation once) + idle', async () => {
    const store = new MemoryAttestationStore();
    const a = store.put(ATT);
    const b = store.put({ ...ATT, activeUj: 1_000n, outcome: 'succeeded' });
    const rec = forge([exec(0), susp(image(2)), res(image(2), 300n), closed()]);
    const segs = [{ ...rec.segments[0]!, attestation: a }, ...rec.segments.slice(1)];
    const twice = forge([
      { kind: 'executed', attestation: a },
      { kind: 'executed', attestation: b },
      { kind: 'executed', attestation: a },
      susp(image(2)),
      res(image(2), 300n),
    ]);
    expect(await runCost(twice, store)).toEqual({
      idleUj: 300n,
      resolvedActiveUj: 48_201_000n,
      attestations: 2,
      complete: true,
      activeUj: 48_201_000n,
      totalUj: 48_201_300n,
    });
    expect((await runCost(segs as never, store)).complete).toBe(true);
  });

  it('an unresolvable attestation is reported, never counted as zero', async () => {
    const store = new MemoryAttestationStore();
    const a = store.put(ATT);
    const lying: AttestationStore = { get: async (x) => (x === addr(9) ? ATT : store.get(x)) };
    const failing: AttestationStore = {
      get: () => {
        throw new Error('db down');
      },
    };
    const rec = forge([{ kind: 'executed', attestation: a }, exec(7), exec(9)]);
    const cost = await runCost(rec, lying);
    expect(cost).toMatchObject({
      complete: false,
      resolvedActiveUj: ATT.activeUj,
      unresolved: [
        { index: 1, attestation: addr(7), reason: 'missing' },
        { index: 2, attestation: addr(9), reason: 'address_mismatch' },
      ],
    });
    expect('totalUj' in cost).toBe(false);
    expect(await runCost(rec, failing)).toMatchObject({
      complete: false,
      unresolved: [{ reason: 'store_error' }, {}, {}],
    });
  });
});
