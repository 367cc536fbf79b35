// The LOG class against the reference's log commands (every case passes) and against its mutants, each
// with one rule of spec/witnessed-heads.md broken: the cases that guard that rule must fail.
import { describe, expect, it } from 'vitest';
import { defaultVectorsDir } from '../package-root.js';
import { logMutant, logReference } from '../reference/log-implementation.js';
import { LOG_MUTANTS, type LogMutantName } from '../reference/log-mutants.js';
import { loadVectors } from '../vectors/files.js';
import { runSuite } from './run-suite.js';

const vectors = loadVectors(defaultVectorsDir()).filter((v) => v.class === 'LOG');

async function failing(name: LogMutantName): Promise<string[]> {
  const results = await runSuite(logMutant(name), vectors);
  return results.filter((r) => !r.passed).map((r) => r.vector.name);
}

/** For each mutant, cases that must fail (not necessarily all that do). */
const GUARDS: Record<LogMutantName, string[]> = {
  sha256: ['root-empty', 'root-one-leaf', 'root-seven-leaves', 'inclusion-rfc-d0', 'consistency-rfc-3-to-7'],
  'no-leaf-prefix': ['root-one-leaf', 'root-two-leaves', 'inclusion-single-leaf', 'inclusion-rfc-d4'],
  'repeat-old-root': [
    'consistency-rfc-4-to-7',
    'consistency-1-to-2',
    'consistency-32-to-64',
    'consistency-power-of-two-old-root-repeated',
  ],
  'index-beyond-size': ['inclusion-index-equals-size', 'inclusion-empty-tree'],
  'shape-as-mismatch': [
    'inclusion-malformed-wins-over-mismatch',
    'inclusion-path-missing-element',
    'consistency-malformed-wins-over-mismatch',
    'consistency-power-of-two-old-root-repeated',
    'consistency-equal-sizes-nonempty-proof',
  ],
  'lenient-fields': ['root-unknown-field', 'inclusion-unknown-field', 'consistency-unknown-field'],
  'size-as-number': ['root-empty', 'root-sixty-nine-leaves'],
  'empty-root-zeros': ['root-empty', 'consistency-from-empty'],
};

describe('the LOG class', () => {
  it(`has its ${vectors.length} cases, and the reference's log commands pass them all`, async () => {
    expect(vectors.length).toBeGreaterThan(70);
    const results = await runSuite(logReference(), vectors);
    expect(results.filter((r) => !r.passed).map((r) => `${r.vector.name}: ${r.detail}`)).toEqual([]);
  });

  for (const name of Object.keys(LOG_MUTANTS) as LogMutantName[]) {
    it(`fails the mutant "${name}" on the cases that guard its rule`, async () => {
      const failed = await failing(name);
      expect(failed).toEqual(expect.arrayContaining(GUARDS[name]));
      expect(failed.length).toBeLessThan(vectors.length); // one defect, not a broken implementation
    });
  }

  it('says what differed', async () => {
    const results = await runSuite(logMutant('repeat-old-root'), vectors);
    const r = results.find((x) => x.vector.name === 'consistency-rfc-4-to-7');
    expect(r?.detail).toBe('expected {"ok":true} got MalformedProof (/ok: expected true got false)');
  });
});
