// One requeue rule for every kind (requeue-order.ts), on a real (PGlite) core with the clock moved by the test:
// a run whose lease is lost — an inline analysis run, a runner-leased command run — re-enters as a new arrival
// of its tenant: BEHIND its tenant's queued peers (its next WFQ finish tag) and aged from the requeue, not at
// the lane's virtual time with its first enqueue time (ahead of them all, and first again once aged).
// Agent turns: src/agents/turn-fairness.test.ts. Equality with admission's kernel: aged-order.test.ts.
import { globalPolicy } from '@everdict/admission';
import { afterEach, describe, expect, it } from 'vitest';
import { type TestCore, testCore } from '../../test/core.js';
import { claimAndStart } from '../scheduler/claim-start.js';
import { leasePolicy, sweepExpiredLeases } from './index.js';

let t: TestCore;
afterEach(async () => t?.close());

const AGING_MS = globalPolicy().agingMs;
const LEASE = { holder: 'holder-a', leaseMs: 10_000 };
const BODIES = {
  analysis: { kind: 'analysis', subject: { config: { fn: 'echo', message: 'x' } } },
  command: { kind: 'command', subject: { command: ['true'] } },
} as const;

describe('requeue order: one rule for every kind', { timeout: 120_000 }, () => {
  it.each(['analysis', 'command'] as const)(
    'a lost %s run re-enters behind its tenant’s queued peers and ages from the requeue',
    async (kind) => {
      let clockMs = Date.now();
      t = await testCore({ scheduler: { enabled: false }, clock: () => new Date(clockMs) });
      const deps = t.core.internals.deps;
      const kinds = [kind];
      const t0 = clockMs;
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        clockMs = t0 + i;
        ids.push((await t.core.services.runs.create(t.admin, BODIES[kind])).run.id);
      }
      const [lost, peer1, peer2] = ids as [string, string, string];

      clockMs = t0 + 5;
      expect((await claimAndStart(deps.db, 1, new Date(clockMs), kinds, LEASE)).map((r) => r.runId)).toEqual([
        lost,
      ]);
      // Its holder died: the lease expires and the sweep requeues it.
      const requeuedAt = t0 + 5 + LEASE.leaseMs + 1;
      clockMs = requeuedAt;
      const swept = await sweepExpiredLeases(deps, leasePolicy({ maxAttempts: 3 }), requeuedAt);
      expect(swept.requeued).toEqual([lost]);
      const entries = await deps.db
        .selectFrom('adm_queue')
        .select(['run_id', 'finish', 'enqueued_at'])
        .orderBy('finish')
        .execute();
      expect(entries.map((e) => [e.run_id, Number(e.enqueued_at)])).toEqual([
        [peer1, t0 + 1],
        [peer2, t0 + 2],
        [lost, requeuedAt],
      ]);

      // Young: the peers queued before the loss come first (before: the lost run, at the lane's virtual time).
      clockMs = requeuedAt + 1;
      const young = await claimAndStart(deps.db, 1, new Date(clockMs), kinds, LEASE);
      expect(young.map((r) => r.runId)).toEqual([peer1]);

      // peer2 has aged; the requeued run has not (it waits from the requeue, not from its first admission:
      // before, it was aged too, and first as its tenant's oldest).
      clockMs = t0 + 2 + AGING_MS + 1;
      expect(clockMs - requeuedAt).toBeLessThan(AGING_MS);
      const later = await claimAndStart(deps.db, 2, new Date(clockMs), kinds, LEASE);
      expect(later.map((r) => [r.runId, r.enqueuedAt, r.waitedMs, r.epoch])).toEqual([
        [peer2, t0 + 2, AGING_MS + 1, 1],
        [lost, requeuedAt, clockMs - requeuedAt, 2],
      ]);
    },
  );
});
