import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { task } from './contract.js';
import { configureTenant, dequeue, release } from './dispatch.js';
import {
  admitOnPath,
  assertPath,
  canAdmit,
  delegate,
  exhaustedResource,
  exhaustion,
  MAX_USD,
  rootEnvelope,
  settleOnPath,
  toMicroUsd,
} from './envelope.js';
import { admit } from './gate.js';
import { MemoryAdmissionStore } from './memory/index.js';

describe('envelope kernels', () => {
  const root = rootEnvelope('t', { usd: 10, tokens: 100, runs: 3 }, 2);
  const slice = delegate(root, { id: 's', caps: { usd: 50 }, inFlightCap: 9 });

  it('delegates a slice whose in-flight cap never exceeds its parent', () => {
    expect(slice).toMatchObject({ parentId: root.id, tenant: 't', inFlightCap: 2, inFlight: 0 });
    expect(() => assertPath([slice, root])).not.toThrow();
    expect(() => assertPath([root, slice])).toThrow(RangeError);
  });

  it('admits while every envelope up to the root has headroom; charges and releases propagate', () => {
    let path = admitOnPath([slice, root]);
    expect(path.map((e) => [e.inFlight, e.spent.runs])).toEqual([
      [1, 1],
      [1, 1],
    ]);
    path = settleOnPath(path, { usd: 12, tokens: 5 });
    expect(path.map((e) => [e.inFlight, e.spent.usd])).toEqual([
      [0, 12],
      [0, 12],
    ]);
    expect(exhaustion(path)).toEqual({ envelopeId: root.id, resource: 'usd' });
    expect(canAdmit([slice, root])).toBe(true);
    expect(exhaustion([slice, root], { usd: 11, tokens: 0 })).toEqual({
      envelopeId: root.id,
      resource: 'usd',
    });
  });
});

// Property: under any interleaving of admit / dispatch / settle across a root and two delegated slices,
// no envelope's usd or tokens ever exceed cap + inFlightCap × (largest single-run actual), and runs
// never exceed their cap at all (they are counted at admit).
describe('envelope overshoot bound', () => {
  const MAX_USD = 5;
  const MAX_TOKENS = 50;
  const op = fc.oneof(
    fc.record({ admit: fc.constantFrom('root', 'a', 'b') }),
    fc.record({
      settle: fc.nat(),
      usd: fc.double({ min: 0, max: MAX_USD, noNaN: true }),
      tokens: fc.integer({ min: 0, max: MAX_TOKENS }),
    }),
  );
  it('is never overspent by more than its in-flight margin', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(op, { maxLength: 120 }),
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 2, max: 5 }),
        async (ops, cap, inFlightCap, sliceInFlight) => {
          const store = new MemoryAdmissionStore();
          await configureTenant(store, 't', {
            budget: { usd: cap, tokens: cap * 10, runs: 60 },
            inFlightCap: inFlightCap + 2,
            maxConcurrent: 1000,
          });
          for (const id of ['a', 'b']) {
            const caps = { usd: cap / 2, tokens: cap * 5, runs: 25 };
            await admit(
              store,
              task('t', `agent-${id}`, { kind: 'agent', envelope: { id, caps, inFlightCap: sliceInFlight } }),
              0,
            );
          }
          const live: string[] = [];
          let n = 0;
          for (const o of ops) {
            if ('admit' in o) {
              const extra =
                o.admit === 'root' ? {} : { cause: 'run' as const, causedByRunId: `agent-${o.admit}` };
              const d = await admit(store, task('t', `r${n++}`, extra), 0);
              if (d.outcome === 'admitted') live.push(d.runId);
            } else if (live.length > 0) {
              const [runId] = live.splice(o.settle % live.length, 1);
              await dequeue(store, 1000, 0);
              await release(
                store,
                {
                  tenant: 't',
                  runId: runId!,
                  status: 'succeeded',
                  actuals: { usd: o.usd, tokens: o.tokens },
                },
                1,
              );
            }
            for (const id of ['root:t', 'a', 'b']) {
              const e = (await store.getEnvelope('t', id))!;
              expect(e.spent.usd).toBeLessThanOrEqual(e.caps.usd! + e.inFlightCap * MAX_USD);
              expect(e.spent.tokens).toBeLessThanOrEqual(e.caps.tokens! + e.inFlightCap * MAX_TOKENS);
              expect(e.spent.runs).toBeLessThanOrEqual(e.caps.runs!);
              expect(e.inFlight).toBeLessThanOrEqual(e.inFlightCap);
            }
          }
        },
      ),
      { numRuns: 120 },
    );
  });
});

// Budgets compare in whole micro-dollars (toMicroUsd): in binary floating point 0.1 + 0.2 > 0.3, so an exact
// fit (cap 0.3, spent 0.1, estimate 0.2) was refused. Amounts with at most 6 decimals now compare exactly.
describe('budget arithmetic in micro-dollars', () => {
  const root = (usd: number, spentUsd: number) => ({
    ...rootEnvelope('t', { usd, tokens: 30 }, 9),
    spent: { usd: spentUsd, tokens: 0, runs: 0 },
  });

  it('admits an exact decimal fit and refuses one micro-dollar more', () => {
    const spent = settleOnPath(admitOnPath([root(0.3, 0)]), { usd: 0.1, tokens: 10 })[0]!;
    expect(exhaustedResource(spent, { usd: 0.2, tokens: 20 })).toBeNull();
    expect(exhaustedResource(spent, { usd: 0.200001, tokens: 0 })).toBe('usd');
    expect(exhaustedResource(spent, { usd: 0, tokens: 21 })).toBe('tokens');
    expect(exhaustedResource(root(0.3, 0.1 + 0.2), { usd: 0, tokens: 0 })).toBe('usd');
    expect(exhaustedResource(root(0.7, 0.1 + 0.2 + 0.4 - 0.000001), { usd: 0.000001, tokens: 0 })).toBeNull();
    expect(toMicroUsd(0.1 + 0.2)).toBe(300_000);
  });

  // Past MAX_USD an amount counts as MAX_USD: finite micro-dollars (a SQL store's float8 product would overflow).
  it('counts amounts past MAX_USD as MAX_USD', () => {
    expect(toMicroUsd(Number.MAX_VALUE)).toBe(toMicroUsd(MAX_USD));
    expect(Number.isFinite(toMicroUsd(1e303))).toBe(true);
    expect(exhaustedResource(root(1e303, 1e299), { usd: 1e299, tokens: 0 })).toBeNull();
    expect(exhaustedResource(root(1e303, 2e302), { usd: 0, tokens: 0 })).toBe('usd');
  });

  // Oracle: integer micro-dollars. Charges settled one by one, then an estimate: admitted iff every sum fits.
  it('agrees with integer micro-dollar arithmetic on random amounts of <= 6 decimals (property)', () => {
    const micros = fc.integer({ min: 0, max: 5_000_000 });
    // The estimate is random, or within one micro-dollar of the balance left (the edge a float misjudges).
    const pick = fc.oneof(
      micros.map((m) => ({ m })),
      fc.integer({ min: -1, max: 1 }).map((edge) => ({ edge })),
    );
    fc.assert(
      fc.property(micros, fc.array(micros, { maxLength: 8 }), pick, (cap, charges, e) => {
        let path = [root(cap / 1e6, 0)];
        for (const c of charges) path = settleOnPath(admitOnPath(path), { usd: c / 1e6, tokens: 0 });
        const spent = charges.reduce((a, b) => a + b, 0);
        const estimate = 'm' in e ? e.m : Math.max(0, cap - spent + e.edge);
        const fits = spent < cap && cap - spent >= estimate;
        expect(exhaustedResource(path[0]!, { usd: estimate / 1e6, tokens: 0 })).toBe(fits ? null : 'usd');
      }),
      { numRuns: 2000 },
    );
  });
});
