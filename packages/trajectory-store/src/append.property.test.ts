// The append state machine against a model: any mix of new events, re-sent ones, conflicting ones,
// seqs below the last that were never stored, and restarts leaves exactly the model's events, in order.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TraceEvent } from '@everdict/run-model';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTrajectoryStoreError } from './errors.js';
import { sampleEvents } from './fixtures.js';
import { localBackend } from './local/local-backend.js';
import { TrajectoryStore } from './trajectory-store.js';

type Step =
  | { kind: 'fresh'; gaps: number[] }
  | { kind: 'resend'; picks: number[]; withFresh: boolean }
  | { kind: 'conflict'; pick: number }
  | { kind: 'below'; pick: number }
  | { kind: 'restart' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('fresh' as const),
    gaps: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 6 }),
  }),
  fc.record({
    kind: fc.constant('resend' as const),
    picks: fc.array(fc.nat(), { maxLength: 5 }),
    withFresh: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('conflict' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('below' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('restart' as const) }),
);

const event = (seq: number): TraceEvent => sampleEvents('run', seq, 1)[0]!;

describe('append', () => {
  it('keeps exactly the accepted events, in seq order, whatever is re-sent or refused', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        const root = await mkdtemp(path.join(os.tmpdir(), 'append-prop-'));
        let store = new TrajectoryStore({ backend: localBackend({ root }) });
        const model: TraceEvent[] = [];
        const last = () => model.at(-1)?.seq ?? -1;
        try {
          for (const s of steps) {
            if (s.kind === 'restart') {
              await store.close();
              store = new TrajectoryStore({ backend: localBackend({ root }) });
              continue;
            }
            let batch: TraceEvent[] = [];
            let expected: string | null = null;
            let seq = last();
            if (s.kind === 'fresh')
              batch = s.gaps.map((g) => {
                seq += g;
                return event(seq);
              });
            if (s.kind === 'resend') {
              batch = model.length ? s.picks.map((p) => model[p % model.length]!) : [];
              if (s.withFresh) batch.push(event(last() + 1));
            }
            if (s.kind === 'conflict' && model.length) {
              batch = [{ ...model[s.pick % model.length]!, ts: '2031-01-01T00:00:00.000Z' }];
              expected = 'event_conflict';
            }
            if (s.kind === 'below') {
              const stored = new Set(model.map((e) => e.seq));
              const holes = Array.from({ length: Math.max(0, last()) }, (_, i) => i).filter(
                (i) => !stored.has(i),
              );
              if (holes.length) {
                batch = [event(holes[s.pick % holes.length]!)];
                expected = 'out_of_order';
              }
            }
            if (batch.length === 0) continue;
            const outcome = await store.append('t', 'run', batch).then(
              () => null,
              (e: unknown) => (isTrajectoryStoreError(e) ? e.code : String(e)),
            );
            expect(outcome).toBe(expected);
            if (expected === null) for (const e of batch) if (e.seq > last()) model.push(e);
          }
          const all = await store.read('t', 'run', { limit: 10_000 });
          expect(all.items).toEqual(model);
        } finally {
          await store.close();
          await rm(root, { recursive: true, force: true });
        }
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});
