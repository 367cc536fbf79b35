// Chunks and sealed blocks are gzip members of canonical JSONL. Compression runs on libuv's thread pool
// (zlib's async API), so a busy store does not stall the event loop.
import { promisify } from 'node:util';
import { constants, gunzip, gzip } from 'node:zlib';
import type { TraceEvent } from '@everdict/run-model';
import { TrajectoryStoreError } from './errors.js';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

const INFLATE_CHUNK = 256 * 1024;

/** gzip level 6 (zlib's default): the figure the bench compares against a raw gzip loop. */
export const GZIP_LEVEL = constants.Z_DEFAULT_COMPRESSION;

export async function compress(bytes: Uint8Array): Promise<Buffer> {
  return gzipAsync(bytes, { level: GZIP_LEVEL });
}

/** Inflates stored bytes (one or more gzip members); bytes that do not inflate are an integrity failure. */
export async function inflate(bytes: Uint8Array, what: string): Promise<Buffer> {
  try {
    // Output comes back in `chunkSize` pieces, one thread-pool round trip each: 256 KiB (not zlib's 16 KiB)
    // inflates a typical chunk in one or two trips.
    return await gunzipAsync(bytes, { chunkSize: INFLATE_CHUNK });
  } catch (err) {
    throw new TrajectoryStoreError('integrity_failed', `${what} does not inflate: ${(err as Error).message}`);
  }
}

/** The lines of inflated JSONL (without their newlines); a missing final newline is an integrity failure. */
export function splitLines(text: Buffer, what: string): string[] {
  if (text.length === 0) return [];
  if (text[text.length - 1] !== 0x0a)
    throw new TrajectoryStoreError('integrity_failed', `${what} does not end with a newline`);
  return text.toString('utf8', 0, text.length - 1).split('\n');
}

/** A stored line back to its event (stored lines were validated when appended). */
export function parseLine(line: string, what: string): TraceEvent {
  try {
    return JSON.parse(line) as TraceEvent;
  } catch {
    throw new TrajectoryStoreError('integrity_failed', `${what} holds a line that is not JSON`);
  }
}

/** How many newline bytes `bytes` holds (= events in inflated JSONL). */
export function countLines(bytes: Uint8Array): number {
  let n = 0;
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = buf.indexOf(0x0a); i !== -1; i = buf.indexOf(0x0a, i + 1)) n++;
  return n;
}
