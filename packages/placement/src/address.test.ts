// Content addresses and the placement mapping: the bytes other hosts must reproduce, and the rung a
// run's placement selects.

import { Placement } from '@everdict/run-model';
import { blake3 } from '@noble/hashes/blake3.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import { canonicalJson, environmentManifest, environmentOf, snapshotAddress } from './address.js';
import { httpStatusOf, PLACEMENT_ERROR_CODES } from './errors.js';
import { placementOf, rungFor } from './placement-map.js';

describe('addresses', () => {
  it('environment manifest: canonical JSON with sorted keys and no spaces, addressed by BLAKE3', () => {
    expect(environmentManifest('process', 'py312', 'ab'.repeat(32))).toBe(
      `{"driver":"process","image":"py312","imageDigest":"${'ab'.repeat(32)}"}`,
    );
    expect(environmentManifest('process', 'default', null)).toBe(
      '{"driver":"process","image":"default","imageDigest":null}',
    );
    const env = environmentOf('kubernetes', 'alpine:3.20', 'sha256:00ff');
    const expected = bytesToHex(
      blake3(new TextEncoder().encode(environmentManifest('kubernetes', 'alpine:3.20', 'sha256:00ff'))),
    );
    expect(env).toEqual({
      driver: 'kubernetes',
      image: 'alpine:3.20',
      imageDigest: 'sha256:00ff',
      address: expected,
    });
  });

  it('canonical JSON sorts nested keys and escapes like JSON.stringify', () => {
    expect(canonicalJson({ b: [1, { d: 'x"y', c: null }], a: true })).toBe(
      '{"a":true,"b":[1,{"c":null,"d":"x\\"y"}]}',
    );
  });

  it('snapshot address is BLAKE3 of the bytes (an independent BLAKE3 agrees)', () => {
    const bytes = new Uint8Array(5000).map((_, i) => i % 251);
    expect(snapshotAddress(bytes)).toBe(bytesToHex(blake3(bytes)));
    expect(snapshotAddress(new Uint8Array())).toBe(
      'af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262',
    );
  });
});

describe('placement mapping', () => {
  it('maps each rung onto run-model placement and back', () => {
    expect(placementOf('inline')).toEqual({ where: 'inline' });
    expect(placementOf('process')).toEqual({ where: 'driver', isolation: 'process' });
    expect(placementOf('kubernetes', 'cluster-eu')).toEqual({
      where: 'runtime',
      isolation: 'container',
      target: 'cluster-eu',
    });
    for (const rung of ['inline', 'process', 'kubernetes'] as const) {
      const p = Placement.parse(placementOf(rung, 'x'));
      expect(rungFor(p)).toBe(rung);
    }
  });

  it('an absent isolation selects the rung’s own; any other isolation selects no rung here', () => {
    expect(rungFor({ where: 'driver' })).toBe('process');
    expect(rungFor({ where: 'runtime', target: 'r1' })).toBe('kubernetes');
    expect(rungFor({ where: 'inline', isolation: 'none' })).toBe('inline');
    expect(rungFor({ where: 'driver', isolation: 'container' })).toBeNull();
    expect(rungFor({ where: 'runtime', isolation: 'vm' })).toBeNull();
    expect(rungFor({ where: 'inline', isolation: 'process' })).toBeNull();
  });
});

describe('errors', () => {
  it('has exactly the ten codes of the contract, each with one status', () => {
    expect([...PLACEMENT_ERROR_CODES].sort()).toEqual(
      [
        'image_not_found',
        'timeout',
        'output_capped',
        'oom',
        'pids_exhausted',
        'gone',
        'capacity',
        'spawn_failed',
        'snapshot_mismatch',
        'unsupported',
      ].sort(),
    );
    expect(httpStatusOf('gone')).toBe(404);
    expect(httpStatusOf('capacity')).toBe(429);
  });
});
