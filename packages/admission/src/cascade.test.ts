import { isTerminalStatus, RunCause, RunStatus } from '@everdict/run-model';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type CausalNode, cascade, cascadeOptOut, revokedBy } from './cascade.js';
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

describe('revokedBy: the gate reaches exactly as far as the cascade would', () => {
  const child = { cause: 'run', kind: 'eval' } as const;
  // root (cancelled) → mid (succeeded) → leaf (running); other (running) → its child (cancelled).
  const root = node('root', null, 'cancelled');
  const mid = node('mid', 'root', 'succeeded');
  const leaf = node('leaf', 'mid');

  it('refuses a child of a cancelled causer, and of a finished run under a cancelled ancestor', () => {
    expect(revokedBy(root, [], child)).toBe('root');
    expect(revokedBy(mid, [root], child)).toBe('root');
    expect(revokedBy(leaf, [mid, root], child)).toBe('root');
    expect(revokedBy(node('c', 'p', 'cancelled'), [node('p', null)], child)).toBe('c');
  });

  it('lets a live tree (finished runs included) cause work', () => {
    const live = node('root', null, 'running');
    expect(revokedBy(node('mid', 'root', 'failed'), [live], child)).toBeNull();
    expect(revokedBy(live, [], child)).toBeNull();
  });

  it('stops at an opted-out run, and lets an opted-out child through (it would survive the cascade)', () => {
    const byEvent = node('mid', 'root', 'succeeded', 'event');
    expect(revokedBy(byEvent, [root], child, { causes: ['event'] })).toBeNull();
    expect(revokedBy(mid, [root], { cause: 'event', kind: 'eval' }, { causes: ['event'] })).toBeNull();
    expect(revokedBy(mid, [root], child, { kinds: ['eval'] })).toBeNull();
    // An opted-out run that is itself cancelled still revokes its own children.
    expect(revokedBy(node('x', 'root', 'cancelled', 'event'), [root], child, { causes: ['event'] })).toBe(
      'x',
    );
  });

  it('agrees with cascade: a new run under `causer` is refused iff cascading the revoker would reach it', () => {
    const status = fc.constantFrom<RunStatus>(...RunStatus.options);
    const cause = fc.constantFrom<RunCause>(...RunCause.options);
    fc.assert(
      fc.property(
        fc.array(fc.tuple(status, cause), { minLength: 1, maxLength: 6 }),
        cause,
        fc.subarray([...RunCause.options]),
        (chain, childCause, skip) => {
          // A chain r0 → r1 → … → rn; the new run is caused by rn.
          const nodes = chain.map(([s, c], i) => node(`r${i}`, i === 0 ? null : `r${i - 1}`, s, c));
          const causer = nodes.at(-1)!;
          const ancestors = nodes.slice(0, -1).reverse();
          const optOut = { causes: skip };
          const got = revokedBy(causer, ancestors, { cause: childCause, kind: 'eval' }, optOut);
          // The reference: the nearest cancelled run on the chain whose cascade would cancel the new run
          // (a queued leaf under the causer).
          const fresh = node('new', causer.runId, 'queued', childCause);
          const reach = [...nodes]
            .reverse()
            .find(
              (n) => n.status === 'cancelled' && cascade([...nodes, fresh], n.runId, optOut).includes('new'),
            );
          expect(got).toBe(reach?.runId ?? null);
        },
      ),
    );
  });
});
