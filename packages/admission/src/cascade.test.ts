import { isTerminalStatus, RunCause, RunStatus } from '@everdict/run-model';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type CausalNode, cascade, cascadeOptOut } from './cascade.js';
import { AdmissionError } from './errors.js';
import { tenantPolicy } from './policy.js';

const node = (
  runId: string,
  causedByRunId: string | null,
  status: RunStatus = 'running',
  cause: RunCause = 'run',
): CausalNode => ({
  runId,
  causedByRunId,
  status,
  cause,
  kind: 'eval',
});

describe('cascade', () => {
  it('reaches non-terminal descendants through finished ones, and never the root or finished work', () => {
    const tree = [
      node('root', null),
      node('a', 'root', 'succeeded'),
      node('a1', 'a', 'queued'),
      node('b', 'root', 'awaiting_input'),
      node('c', 'root', 'cancelled'),
      node('x', null, 'running'),
      node('x1', 'x'),
    ];
    expect(cascade(tree, 'root').sort()).toEqual(['a1', 'b']);
  });

  it('leaves an opted-out cause (or kind) and everything it caused', () => {
    const tree = [
      node('root', null),
      node('e', 'root', 'running', 'event'),
      node('e1', 'e'),
      node('k', 'root'),
    ];
    expect(cascade(tree, 'root', { causes: ['event'] })).toEqual(['k']);
    expect(cascade(tree, 'root', { kinds: ['eval'] })).toEqual([]);
  });

  it('reads its opt-out from the tenant policy (`cascade.skipKinds` / `skipCauses`, validated)', () => {
    const tree = [node('root', null), node('e', 'root', 'running', 'event'), node('k', 'root')];
    expect(tenantPolicy().cascade).toEqual({ skipKinds: [], skipCauses: [] });
    const policy = tenantPolicy({ cascade: { skipCauses: ['event'] } });
    expect(cascade(tree, 'root', cascadeOptOut(policy.cascade))).toEqual(['k']);
    expect(
      cascade(tree, 'root', cascadeOptOut(tenantPolicy({ cascade: { skipKinds: ['eval'] } }).cascade)),
    ).toEqual([]);
    for (const bad of [
      { skipCauses: ['nobody'] },
      { skipKinds: ['Not A Kind'] },
      { skipKinds: [], extra: 1 },
    ])
      expect(() => tenantPolicy({ cascade: bad as never })).toThrow(AdmissionError);
  });

  // Reference: x is cancelled iff x ≠ root, x is non-terminal, root is a proper ancestor of x, and no run
  // on the path below the root down to x (inclusive) is opted out.
  it('cancels exactly the non-terminal, non-opted-out descendants (property)', () => {
    const arb = fc.array(
      fc.record({
        parent: fc.nat(),
        status: fc.constantFrom(...RunStatus.options),
        cause: fc.constantFrom(...RunCause.options),
      }),
      { minLength: 1, maxLength: 60 },
    );
    fc.assert(
      fc.property(arb, fc.nat(), fc.subarray([...RunCause.options]), (spec, r, optOut) => {
        const nodes = spec.map((s, i) =>
          node(`n${i}`, i === 0 || s.parent % (i + 1) === i ? null : `n${s.parent % i}`, s.status, s.cause),
        );
        const rootId = `n${r % nodes.length}`;
        const byId = new Map(nodes.map((n) => [n.runId, n]));
        const expected = nodes.filter((n) => {
          if (n.runId === rootId || isTerminalStatus(n.status)) return false;
          for (let cur: CausalNode | undefined = n; cur; cur = byId.get(cur.causedByRunId ?? '')) {
            if (cur.causedByRunId === rootId) return !optOut.includes(cur.cause);
            if (optOut.includes(cur.cause)) return false;
          }
          return false;
        });
        expect(cascade(nodes, rootId, { causes: optOut }).sort()).toEqual(
          expected.map((n) => n.runId).sort(),
        );
      }),
      { numRuns: 300 },
    );
  });
});
