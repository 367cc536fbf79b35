import { canonicalJson as runModelCanonical } from '@everdict/run-model';
import { describe, expect, it } from 'vitest';
import { canonicalJson, canonicalJsonl } from './canonical.js';
import { isTrajectoryStoreError } from './errors.js';

// The encoding itself is run-model's and tested there (canonical-json.test.ts); here: the same bytes, this
// package's refusal, and JSONL framing.
describe('canonical JSON (run-model’s encoding, this package’s refusal)', () => {
  it('writes exactly run-model’s bytes', () => {
    const v = { b: [1, { d: 'x', c: null }], a: 'é😀', n: -0 };
    expect(canonicalJson(v)).toBe(runModelCanonical(v));
    expect(canonicalJson(v)).toBe('{"a":"é😀","b":[1,{"c":null,"d":"x"}],"n":0}');
  });

  it('refuses what JSON cannot hold as bad_request', () => {
    for (const bad of [Number.NaN, { a: Number.POSITIVE_INFINITY }, () => 1, 1n]) {
      let err: unknown;
      try {
        canonicalJsonl([bad]);
      } catch (e) {
        err = e;
      }
      expect(isTrajectoryStoreError(err) && err.code).toBe('bad_request');
    }
  });

  it('JSONL ends every line with a newline; the empty trajectory is empty', () => {
    expect(canonicalJsonl([{ b: 2, a: 1 }, [1]])).toBe('{"a":1,"b":2}\n[1]\n');
    expect(canonicalJsonl([])).toBe('');
  });
});
