// Reading a trajectory by offset. Live: the chunks that cover the range. Sealed: the blocks that cover it,
// each checked against its digest in `seal.json` before any of its events is served. `verifySealed`
// re-reads the whole object and recomputes the trajectory digest.
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import type { TraceEvent } from '@everdict/run-model';
import type { ObjectBackend } from './backend.js';
import type { ChunkIndex } from './chunk-index.js';
import { readChunkLines } from './chunk-read.js';
import { countLines, inflate, parseLine, splitLines } from './codec.js';
import { type Digest, digestOf, StreamingDigest } from './digest.js';
import { TrajectoryStoreError } from './errors.js';
import { layout } from './keys.js';
import type { SealBlock, SealRecord } from './records.js';

export interface Page {
  readonly items: TraceEvent[];
  /** The offset after the last item (= the offset asked for when there are no items). */
  readonly nextOffset: number;
}

export interface ReadTarget {
  readonly backend: ObjectBackend;
  readonly tenant: string;
  readonly id: string;
}

export async function readLive(
  t: ReadTarget,
  index: ChunkIndex,
  offset: number,
  limit: number,
): Promise<Page> {
  const items: TraceEvent[] = [];
  let next = offset;
  for (let i = index.findOffset(offset); i >= 0 && i < index.length && items.length < limit; i++) {
    const entry = index.at(i);
    const lines = await readChunkLines(t.backend, t.tenant, t.id, entry);
    for (let k = next - entry.offset; k < lines.length && items.length < limit; k++, next++)
      items.push(parseLine(lines[k]!, `trajectory ${t.id}`));
  }
  return { items, nextOffset: next };
}

export async function readSealed(
  t: ReadTarget,
  seal: SealRecord,
  offset: number,
  limit: number,
): Promise<Page> {
  const items: TraceEvent[] = [];
  let next = offset;
  for (
    let b = findBlock(seal.blocks, offset);
    b >= 0 && b < seal.blocks.length && items.length < limit;
    b++
  ) {
    const block = seal.blocks[b]!;
    const lines = await readBlockLines(t, block);
    for (let k = next - block.offset; k < lines.length && items.length < limit; k++, next++)
      items.push(parseLine(lines[k]!, `trajectory ${t.id}`));
  }
  return { items, nextOffset: next };
}

async function readBlockLines(t: ReadTarget, block: SealBlock): Promise<string[]> {
  const bytes = await t.backend.getRange(
    { tenant: t.tenant, path: layout.sealedObject(t.id) },
    block.start,
    block.length,
  );
  if (!bytes)
    throw new TrajectoryStoreError('integrity_failed', `trajectory ${t.id}: sealed object is missing`);
  if (bytes.byteLength !== block.length || (await digestOf(bytes)) !== block.digest)
    throw new TrajectoryStoreError(
      'integrity_failed',
      `trajectory ${t.id}: bytes do not match their digest`,
      {
        trajectoryId: t.id,
        offset: block.offset,
      },
    );
  const lines = splitLines(await inflate(bytes, `trajectory ${t.id}`), `trajectory ${t.id}`);
  if (lines.length !== block.count)
    throw new TrajectoryStoreError('integrity_failed', `trajectory ${t.id}: a block lost events`);
  return lines;
}

function findBlock(blocks: readonly SealBlock[], offset: number): number {
  let lo = 0;
  let hi = blocks.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const b = blocks[mid]!;
    if (b.offset + b.count <= offset) lo = mid + 1;
    else hi = mid - 1;
  }
  return lo < blocks.length && blocks[lo]!.offset <= offset ? lo : -1;
}

export interface Verification {
  /** True when the stored bytes reproduce the sealed digest and event count (and `expected`, if given). */
  readonly ok: boolean;
  /** The digest the stored bytes have now (null if they could not be read or inflated). */
  readonly actual: Digest | null;
  readonly expected: string;
  readonly eventCount: number | null;
  readonly reason?: string;
}

/** Streams the sealed object through gunzip and BLAKE3; a mismatch is reported, never thrown away. */
export async function verifySealed(
  t: ReadTarget,
  seal: SealRecord,
  expected?: string,
): Promise<Verification> {
  const want = expected ?? seal.digest;
  const fail = (reason: string, actual: Digest | null = null, eventCount: number | null = null) => ({
    ok: false,
    actual,
    expected: want,
    eventCount,
    reason,
  });
  const body = await t.backend.getStream({ tenant: t.tenant, path: layout.sealedObject(t.id) });
  if (!body) return fail('the sealed object is missing');
  const hasher = await StreamingDigest.create();
  let events = 0;
  let lastByte = 0x0a;
  try {
    await pipeline(body, createGunzip(), async (inflated: AsyncIterable<Buffer>) => {
      for await (const piece of inflated) {
        hasher.update(piece);
        events += countLines(piece);
        if (piece.length > 0) lastByte = piece[piece.length - 1]!;
      }
    });
  } catch (err) {
    return fail(`the sealed object does not inflate: ${(err as Error).message}`);
  }
  const actual = hasher.digest();
  if (actual !== want) return fail('the bytes do not match the digest', actual, events);
  if (actual !== seal.digest) return fail('the seal record names another digest', actual, events);
  if (events !== seal.eventCount || lastByte !== 0x0a)
    return fail(`the object holds ${events} events, the seal says ${seal.eventCount}`, actual, events);
  return { ok: true, actual, expected: want, eventCount: events };
}
