// The ATTEST class against deliberately wrong implementations (test/fixtures/attest-mutants.ts): each must
// fail the cases that guard its defect, and only ATTEST cases — the classes before it do not look at the
// bundle, so a mutant of the bundle must pass them all.
import { describe, expect, it } from 'vitest';
import { defaultVectorsDir } from '../src/package-root.js';
import { referenceImplementation } from '../src/reference/implementation.js';
import { runSuite } from '../src/suite/run-suite.js';
import { loadVectors } from '../src/vectors/files.js';
import { MUTANTS, mutantImplementation } from './fixtures/attest-mutants.js';

const vectors = loadVectors(defaultVectorsDir());
const attest = vectors.filter((v) => v.class === 'ATTEST');

describe('the ATTEST class', () => {
  it('passes against the reference', async () => {
    const failed = (await runSuite(referenceImplementation, attest)).filter((r) => !r.passed);
    expect(failed.map((r) => `${r.vector.name}: ${r.detail}`)).toEqual([]);
    expect(attest.length).toBeGreaterThan(60);
  });

  for (const m of MUTANTS) {
    it(`fails a mutant that ${m.what} (${m.name})`, async () => {
      const results = await runSuite(mutantImplementation(m), vectors);
      const failed = results.filter((r) => !r.passed);
      expect(failed.map((r) => r.vector.name)).toEqual(expect.arrayContaining([...m.caughtBy]));
      expect(failed.filter((r) => r.vector.class !== 'ATTEST').map((r) => r.vector.name)).toEqual([]);
    });
  }
});
