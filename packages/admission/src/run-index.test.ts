import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RunIndex } from './run-index.js';

/** Rows as the run table keeps them: a run id and a tenant number per row. */
function rows(): { runId: string[]; tenant: Int32Array; push(scope: number, key: string): number } {
  const keys = {
    runId: [] as string[],
    tenant: new Int32Array(4),
    push(scope: number, key: string): number {
      const r = keys.runId.length;
      if (r === keys.tenant.length) {
        const t = new Int32Array(r * 2);
        t.set(keys.tenant);
        keys.tenant = t;
      }
      keys.runId.push(key);
      keys.tenant[r] = scope;
      return r;
    },
  };
  return keys;
}

describe('RunIndex', () => {
  it('agrees with a Map on any insert / lookup sequence, through growth', () => {
    const op = fc.record({
      scope: fc.integer({ min: 0, max: 3 }),
      // Few distinct ids, so the same id recurs across scopes and lookups hit and miss.
      key: fc.oneof(
        fc.string({ maxLength: 3 }),
        fc.constantFrom('', 'a', 'run-1', 'run-2', 'é', '\u{1f600}'),
      ),
      insert: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 400 }), fc.integer({ min: 1, max: 64 }), (ops, capacity) => {
        const keys = rows();
        const index = new RunIndex(keys, capacity);
        const ref = new Map<string, number>();
        for (const { scope, key, insert } of ops) {
          const k = `${scope}\u0000${key}`;
          if (insert && !ref.has(k)) {
            const r = keys.push(scope, key);
            index.add(scope, key, r);
            ref.set(k, r);
          }
          expect(index.get(scope, key)).toBe(ref.get(k) ?? -1);
          expect(index.size).toBe(ref.size);
        }
        for (const [k, r] of ref) {
          const [scope, key] = [Number(k.slice(0, k.indexOf('\u0000'))), k.slice(k.indexOf('\u0000') + 1)];
          expect(index.get(scope, key)).toBe(r);
        }
      }),
    );
  });

  it('keeps every row of a large fill findable and scoped', () => {
    const keys = rows();
    const index = new RunIndex(keys, 1);
    for (let i = 0; i < 50_000; i++) index.add(i % 7, `run-${i}`, keys.push(i % 7, `run-${i}`));
    expect(index.size).toBe(50_000);
    for (let i = 0; i < 50_000; i += 97) {
      expect(index.get(i % 7, `run-${i}`)).toBe(i);
      expect(index.get((i + 1) % 7, `run-${i}`)).toBe(-1);
    }
    expect(index.get(0, 'run-50000')).toBe(-1);
  });
});
