// The events the store takes: run-model's TraceEvent, parsed at the boundary, every one of the
// trajectory's own run. A draft is an event before the store numbers it (imports and OTLP spans routed to a
// live run): no `seq`, no `runId`.
import { TraceEvent, type TraceEventInput } from '@everdict/run-model';
import { z } from 'zod';
import { parseOrThrow, TrajectoryStoreError } from './errors.js';

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** A TraceEvent without `seq` and `runId` (the store assigns both). */
export type TraceEventDraft = DistributiveOmit<TraceEventInput, 'seq' | 'runId'>;

/**
 * Parses a batch of events; a `__proto__` key in an event's JSON is kept as data (run-model's JSON values keep
 * every own key: its json-value.ts).
 */
export function parseBatch(input: unknown, trajectoryId: string, maxEvents: number): TraceEvent[] {
  const events = parseOrThrow(z.array(TraceEvent).max(maxEvents), input, 'events');
  checkRunIds(events, trajectoryId);
  return events;
}

/** Every event of a trajectory is its run's (`runId` = the trajectory id). */
export function checkRunIds(events: readonly TraceEvent[], trajectoryId: string): void {
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    if (e.runId !== trajectoryId)
      throw new TrajectoryStoreError(
        'bad_request',
        `event ${i} belongs to run ${e.runId}, not ${trajectoryId}`,
        {
          index: i,
        },
      );
  }
}

/** Numbers drafts from `firstSeq` and stamps them with the trajectory id, then parses them. */
export function numberDrafts(
  drafts: readonly TraceEventDraft[],
  trajectoryId: string,
  firstSeq: number,
  maxEvents: number,
): TraceEvent[] {
  const events = drafts.map((d, i) => ({ ...d, seq: firstSeq + i, runId: trajectoryId }));
  return parseBatch(events, trajectoryId, maxEvents);
}
