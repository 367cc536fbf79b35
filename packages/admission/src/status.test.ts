import { type RunStatus, TRANSITIONS } from '@everdict/run-model';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { task } from './contract.js';
import { cancelTree, configureTenant, dequeue, release } from './dispatch.js';
import { admit } from './gate.js';
import { MemoryAdmissionStore } from './memory/index.js';

// Legal means a row of run-model's status machine. Admission births tasks queued and sessions running.
const BORN: Readonly<Record<'task' | 'session', RunStatus>> = { task: 'queued', session: 'running' };
const legal = (from: RunStatus, to: RunStatus) => TRANSITIONS.some((t) => t.from === from && t.to === to);

const op = fc.oneof(
  fc.record({ admit: fc.boolean(), session: fc.boolean(), causer: fc.option(fc.nat(), { nil: undefined }) }),
  fc.record({ dequeue: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ release: fc.nat(), status: fc.constantFrom('succeeded', 'failed', 'cancelled' as const) }),
  fc.record({ cancelTree: fc.nat() }),
);

describe('status paths', () => {
  it('every status path the gate, dispatch, settle and cascade produce is legal', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 80 }), async (ops) => {
        const store = new MemoryAdmissionStore();
        await configureTenant(store, 't', {
          maxConcurrent: 2,
          maxQueued: 20,
          session: { maxSessions: 3, memberReserve: 1 },
        });
        const seen = new Map<string, RunStatus>();
        let n = 0;
        let now = 0;
        for (const o of ops) {
          now += 10;
          const ids = [...seen.keys()];
          const pick = (i: number) => ids[i % ids.length]!;
          if ('admit' in o) {
            const causedByRunId = o.causer !== undefined && ids.length > 0 ? pick(o.causer) : undefined;
            const lifetime = o.session ? 'session' : 'task';
            const d = await admit(
              store,
              task('t', `r${n++}`, { lifetime, causedByRunId, cause: causedByRunId ? 'run' : 'member' }),
              now,
            );
            if (d.outcome === 'admitted') {
              expect((await store.getRun('t', d.runId))?.status).toBe(BORN[lifetime]);
              seen.set(d.runId, BORN[lifetime]);
            }
          } else if ('dequeue' in o) await dequeue(store, o.dequeue, now);
          else if ('release' in o && ids.length > 0)
            await release(store, { tenant: 't', runId: pick(o.release), status: o.status }, now);
          else if ('cancelTree' in o && ids.length > 0) await cancelTree(store, 't', pick(o.cancelTree), now);
          for (const [id, before] of seen) {
            const after = (await store.getRun('t', id))!.status;
            if (after !== before) expect(legal(before, after), `${id}: ${before} → ${after}`).toBe(true);
            seen.set(id, after);
          }
        }
      }),
      { numRuns: 150 },
    );
  });
});
