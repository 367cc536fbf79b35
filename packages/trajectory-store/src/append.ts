// Appending to a live trajectory: ordered by `seq`, idempotent per event (the event id is its `seq` within
// the run). The whole batch is checked before anything is written, so a refused batch changes nothing.
//   seq above the last stored one → appended (in batch order, each above the previous)
//   seq at or below it            → a re-sent event: the same canonical bytes are a duplicate (skipped);
//                                   other bytes are `event_conflict`; a seq never stored is `out_of_order`
import type { TraceEvent } from '@everdict/run-model';
import type { ObjectBackend } from './backend.js';
import { canonicalLine } from './canonical.js';
import type { ChunkEntry, ChunkIndex } from './chunk-index.js';
import { chunkName } from './chunk-index.js';
import { readChunkLines } from './chunk-read.js';
import { compress, parseLine } from './codec.js';
import { extendDigest } from './digest.js';
import { TrajectoryStoreError } from './errors.js';
import { layout } from './keys.js';

export interface AppendResult {
  /** Events stored by this call. */
  readonly appended: number;
  /** Re-sent events recognised and skipped. */
  readonly duplicates: number;
  /** Events in the trajectory after this call (= the offset the next event gets). */
  readonly eventCount: number;
  /** The last stored seq (-1 if none). */
  readonly lastSeq: number;
}

export interface AppendTarget {
  readonly backend: ObjectBackend;
  readonly tenant: string;
  readonly id: string;
  readonly index: ChunkIndex;
  readonly maxBatchBytes: number;
}

/** Refuses a batch whose canonical JSONL is over `maxBatchBytes`. */
export function checkBatchBytes(bytes: number, maxBatchBytes: number): void {
  if (bytes > maxBatchBytes)
    throw new TrajectoryStoreError('bad_request', `a batch of ${bytes} bytes is over ${maxBatchBytes}`, {
      bytes,
      maxBatchBytes,
    });
}

/** Stores `events` (already parsed, runId checked) as one chunk; returns what happened. */
export async function appendEvents(
  target: AppendTarget,
  events: readonly TraceEvent[],
  batchKey?: string,
): Promise<AppendResult> {
  const { index } = target;
  let last = index.lastSeq;
  let text = '';
  let fresh = 0;
  let firstSeq = -1;
  const resent: { seq: number; line: string; at: number }[] = [];
  events.forEach((event, at) => {
    const line = canonicalLine(event);
    if (event.seq > last) {
      if (fresh === 0) firstSeq = event.seq;
      text += line;
      fresh++;
      last = event.seq;
    } else resent.push({ seq: event.seq, line, at });
  });
  for (const r of resent) {
    const stored = inBatch(events, r.seq, r.at, index.lastSeq) ?? (await storedLine(target, r.seq));
    if (stored === undefined)
      throw new TrajectoryStoreError(
        'out_of_order',
        `event ${r.at}: seq ${r.seq} is not above ${index.lastSeq}`,
        {
          index: r.at,
          seq: r.seq,
          lastSeq: index.lastSeq,
        },
      );
    if (stored !== r.line)
      throw new TrajectoryStoreError(
        'event_conflict',
        `event ${r.at}: seq ${r.seq} was stored with other content`,
        {
          index: r.at,
          seq: r.seq,
        },
      );
  }
  if (fresh > 0) {
    const raw = Buffer.from(text, 'utf8');
    const bytes = raw.length;
    checkBatchBytes(bytes, target.maxBatchBytes);
    const entry: ChunkEntry = {
      offset: index.eventCount,
      count: fresh,
      firstSeq,
      lastSeq: last,
      ...(batchKey ? { batchKey } : {}),
    };
    const stored = await compress(raw);
    await target.backend.put(
      { tenant: target.tenant, path: layout.chunk(target.id, chunkName(entry)) },
      stored,
    );
    index.push(entry);
    const running = index.running;
    if (running) {
      running.text = extendDigest(running.text, raw);
      running.stored = extendDigest(running.stored, stored);
      running.textBytes += bytes;
    }
  }
  return { appended: fresh, duplicates: resent.length, eventCount: index.eventCount, lastSeq: index.lastSeq };
}

/** The line of an earlier event of this batch (before position `before`) that will store `seq`. */
function inBatch(
  events: readonly TraceEvent[],
  seq: number,
  before: number,
  storedLast: number,
): string | undefined {
  if (seq <= storedLast) return undefined;
  for (let i = 0; i < before; i++) if (events[i]!.seq === seq) return canonicalLine(events[i]);
  return undefined;
}

/** The stored canonical line of `seq`, or undefined if it was never stored. */
async function storedLine(target: AppendTarget, seq: number): Promise<string | undefined> {
  const i = target.index.findSeq(seq);
  if (i < 0) return undefined;
  const lines = await readChunkLines(target.backend, target.tenant, target.id, target.index.at(i));
  const found = lines.find((line) => parseLine(line, 'a chunk').seq === seq);
  return found === undefined ? undefined : `${found}\n`;
}
