// Sealing: the live chunks, streamed one at a time, become one immutable object — their gzip members
// concatenated (a valid multi-member gzip file: `zcat trajectory.jsonl.gz | b3sum` prints the digest) —
// while the uncompressed canonical JSONL streams through BLAKE3. Memory holds one chunk, never the
// trajectory. Then `seal.json` is written (its presence is the seal) and the chunks are removed.
import type { ObjectBackend } from './backend.js';
import { type ChunkIndex, chunkName } from './chunk-index.js';
import { readChunkBytes } from './chunk-read.js';
import { countLines, inflate } from './codec.js';
import { finishDigest, StreamingDigest } from './digest.js';
import { TrajectoryStoreError } from './errors.js';
import { layout } from './keys.js';
import { encodeRecord, type Provenance, type SealBlock, SealRecord } from './records.js';

/** Blocks of the sealed object are cut at this many stored bytes (or at the end). */
export const BLOCK_TARGET_BYTES = 256 * 1024;
/** Chunks read ahead of the one being sealed (memory: this many chunks). */
const READ_AHEAD = 4;

export interface SealSource {
  readonly backend: ObjectBackend;
  readonly tenant: string;
  readonly id: string;
  readonly index: ChunkIndex;
  readonly sealedAt: string;
  readonly provenance?: Provenance;
}

export async function sealTrajectory(src: SealSource): Promise<SealRecord> {
  const { backend, tenant, id, index } = src;
  // With running digests (this process wrote every event) the chunks need not be inflated: their stored
  // bytes are checked against what was written, and the canonical digest is already known.
  const running = index.running;
  const whole = await StreamingDigest.create();
  const storedCheck = await StreamingDigest.create();
  const block = await StreamingDigest.create();
  const blocks: SealBlock[] = [];
  let stored = 0;
  let open = { offset: 0, count: 0, start: 0, length: 0 };
  const closeBlock = () => {
    if (open.count === 0) return;
    blocks.push({ ...open, digest: block.digest() });
    block.reset();
    open = { offset: open.offset + open.count, count: 0, start: stored, length: 0 };
  };
  // Chunks are read (and inflated) a few ahead of the one being hashed and written, so I/O overlaps work.
  const fetchChunk = async (i: number) => {
    const entry = index.at(i);
    const bytes = await readChunkBytes(backend, tenant, id, entry);
    return { entry, bytes, text: running ? null : await inflate(bytes, `chunk ${i}`) };
  };
  async function* body(): AsyncGenerator<Uint8Array> {
    const ahead: ReturnType<typeof fetchChunk>[] = [];
    const fill = (from: number) => {
      for (let k = from + ahead.length; k < index.length && ahead.length < READ_AHEAD; k++) {
        const p = fetchChunk(k);
        p.catch(() => undefined); // awaited in its turn; never an unhandled rejection meanwhile
        ahead.push(p);
      }
    };
    fill(0);
    for (let i = 0; i < index.length; i++) {
      const { entry, bytes, text } = await ahead.shift()!;
      fill(i + 1);
      if (text) {
        if (countLines(text) !== entry.count || text[text.length - 1] !== 0x0a)
          throw new TrajectoryStoreError(
            'integrity_failed',
            `chunk ${i} does not hold ${entry.count} events`,
            {
              trajectoryId: id,
            },
          );
        whole.update(text);
      } else storedCheck.update(bytes);
      block.update(bytes);
      open.count += entry.count;
      open.length += bytes.byteLength;
      stored += bytes.byteLength;
      if (open.length >= BLOCK_TARGET_BYTES) closeBlock();
      yield bytes;
    }
    closeBlock();
  }
  const written = await backend.putStream({ tenant, path: layout.sealedObject(id) }, body());
  if (written.size !== stored)
    throw new TrajectoryStoreError(
      'storage_unavailable',
      `sealed object took ${written.size} of ${stored} bytes`,
    );
  if (running && storedCheck.digest() !== finishDigest(running.stored))
    throw new TrajectoryStoreError(
      'integrity_failed',
      `trajectory ${id}: chunks changed since they were written`,
    );
  const seal = SealRecord.parse({
    version: 1,
    trajectoryId: id,
    digest: running ? finishDigest(running.text) : whole.digest(),
    eventCount: index.eventCount,
    bytes: running ? running.textBytes : whole.bytes,
    storedBytes: stored,
    lastSeq: index.lastSeq,
    sealedAt: src.sealedAt,
    blocks,
    ...(src.provenance ? { provenance: src.provenance } : {}),
  });
  await backend.put({ tenant, path: layout.seal(id) }, encodeRecord(seal));
  for (let i = 0; i < index.length; i += READ_AHEAD * 4) {
    const group = [];
    for (let k = i; k < Math.min(index.length, i + READ_AHEAD * 4); k++)
      group.push(backend.delete({ tenant, path: chunkPath(id, index, k) }));
    await Promise.all(group);
  }
  return seal;
}

function chunkPath(id: string, index: ChunkIndex, i: number): string {
  return layout.chunk(id, chunkName(index.at(i)));
}
