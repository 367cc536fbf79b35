// The snapshot's policies are parsed once per stored JSON (every create batch reads the same few), frozen so
// that no reader changes what the next batch gets; a different stored policy is parsed on its own, and one
// that does not parse is refused as before.
import { globalPolicy, tenantPolicy } from '@everdict/admission';
import { describe, expect, it } from 'vitest';
import { type SnapshotParts, snapshotOf } from './load.js';

const parts = (policy: unknown, global?: unknown): SnapshotParts =>
  ({
    prior: null,
    tenant: {
      tenant: 't1',
      policy,
      running: 0,
      queued_interactive: 0,
      queued_background: 0,
      queued_batch: 0,
    },
    global: global === undefined ? undefined : { id: 1, policy: global },
    causer: null,
    path: [],
    sliceTaken: false,
    agentDisabled: false,
    ends: undefined,
  }) as unknown as SnapshotParts;

describe('snapshot policies', () => {
  it('the same stored policy is parsed once: one frozen value, equal to a fresh parse', () => {
    const stored = { maxConcurrent: 7, maxQueued: 11 };
    const a = snapshotOf(parts({ ...stored }));
    const b = snapshotOf(parts({ ...stored }));
    expect(b.policy).toBe(a.policy);
    expect(a.policy).toEqual(tenantPolicy(stored));
    expect(Object.isFrozen(a.policy)).toBe(true);
    expect(b.global).toBe(a.global);
    expect(a.global).toEqual(globalPolicy());
    expect(() => {
      (a.policy as { maxQueued: number }).maxQueued = 1;
    }).toThrow(TypeError);
  });

  it('another stored policy gets its own parse; an invalid one is refused every time', () => {
    const a = snapshotOf(parts({ maxConcurrent: 7 }));
    const c = snapshotOf(parts({ maxConcurrent: 8 }));
    expect(c.policy).not.toBe(a.policy);
    expect(c.policy?.maxConcurrent).toBe(8);
    for (let i = 0; i < 2; i++) expect(() => snapshotOf(parts({ maxConcurrent: -1 }))).toThrow();
    const g = snapshotOf(parts({}, { agingMs: 1234 }));
    expect(g.global.agingMs).toBe(1234);
    expect(snapshotOf(parts({}, { agingMs: 1234 })).global).toBe(g.global);
  });
});
