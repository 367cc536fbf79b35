// `compare`'s case matching as a property: a change is listed exactly when a case both groups carry has a verdict
// for one grader in each and the two differ; regressions (passed → failed) come first.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { caseChanges } from '../src/commands/compare.js';

const verdicts = fc
  .dictionary(
    fc.constantFrom('a', 'b', 'c', 'd', 'e'),
    fc.dictionary(fc.constantFrom('exact', 'contains', 'exit_code'), fc.boolean()),
  )
  .map((cases) => new Map(Object.entries(cases).map(([c, g]) => [c, new Map(Object.entries(g))])));

describe('compare: caseChanges', () => {
  it('lists exactly the differing verdicts of shared cases and graders, regressions first', () => {
    fc.assert(
      fc.property(verdicts, verdicts, (base, next) => {
        const changes = caseChanges({ verdicts: base }, { verdicts: next });
        const expected = new Set<string>();
        for (const [c, after] of next)
          for (const [g, passed] of after) {
            const was = base.get(c)?.get(g);
            if (was !== undefined && was !== passed) expected.add(`${c}/${g}/${was}->${passed}`);
          }
        expect(
          new Set(changes.map((x) => `${x.caseId}/${x.grader}/${x.from === 'passed'}->${x.to === 'passed'}`)),
        ).toEqual(expected);
        expect(changes).toHaveLength(expected.size);
        const firstFix = changes.findIndex((x) => x.to === 'passed');
        if (firstFix !== -1) expect(changes.slice(firstFix).every((x) => x.to === 'passed')).toBe(true);
      }),
    );
  });

  it('compares nothing across different case ids or graders', () => {
    const base = new Map([['a', new Map([['exact', true]])]]);
    expect(
      caseChanges({ verdicts: base }, { verdicts: new Map([['b', new Map([['exact', false]])]]) }),
    ).toEqual([]);
    expect(
      caseChanges({ verdicts: base }, { verdicts: new Map([['a', new Map([['other', false]])]]) }),
    ).toEqual([]);
    expect(
      caseChanges({ verdicts: base }, { verdicts: new Map([['a', new Map([['exact', false]])]]) }),
    ).toEqual([{ caseId: 'a', grader: 'exact', from: 'passed', to: 'failed' }]);
  });
});
