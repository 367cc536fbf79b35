// A command's output stream → log events in the journal: each event the whole lines one read brought, as many
// as fit in MAX_LINE_BYTES (a line longer than that is cut into several events), while keeping the stream's
// last `tailBytes` for the run's outputs.
// Reading waits for each append, so a slow control plane slows the command's pipe instead of filling memory.
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { Journal } from './journal.js';

export const TAIL_BYTES = 64 * 1024;
export const MAX_LINE_BYTES = 16 * 1024;

/** The last `cap` bytes of a stream. */
export class Tail {
  #chunks: Buffer[] = [];
  #bytes = 0;
  #dropped = false;
  constructor(readonly cap: number = TAIL_BYTES) {}
  push(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#bytes += chunk.length;
    while (this.#bytes - (this.#chunks[0]?.length ?? 0) >= this.cap && this.#chunks.length > 1) {
      this.#bytes -= this.#chunks.shift()!.length;
      this.#dropped = true;
    }
  }
  get truncated(): boolean {
    return this.#dropped || this.#bytes > this.cap;
  }
  text(): string {
    const all = Buffer.concat(this.#chunks);
    const kept = all.length > this.cap ? all.subarray(all.length - this.cap) : all;
    return kept.toString('utf8');
  }
}

export async function pumpOutput(
  source: Readable,
  stream: 'stdout' | 'stderr',
  journal: Journal,
  tail: Tail,
): Promise<number> {
  const decoder = new StringDecoder('utf8');
  let carry = '';
  let total = 0;
  const level = stream === 'stderr' ? 'warn' : 'info';
  const emit = (message: string) => journal.append({ type: 'log', level, stream, message });
  for await (const chunk of source as AsyncIterable<Buffer>) {
    total += chunk.length;
    tail.push(chunk);
    carry += decoder.write(chunk);
    // Every whole line the read completed, as one block: one event for all of them while they fit.
    const end = carry.lastIndexOf('\n');
    if (end >= 0) {
      await emitLines(carry.slice(0, end), emit);
      carry = carry.slice(end + 1);
    }
    // A line still open past the bound: its first pieces go now (the pipe's memory is the bound's, not the line's).
    if (Buffer.byteLength(carry) > MAX_LINE_BYTES) {
      let bytes = Buffer.from(carry, 'utf8');
      while (bytes.length > MAX_LINE_BYTES) {
        const cut = characterBoundary(bytes, MAX_LINE_BYTES);
        await emit(bytes.toString('utf8', 0, cut));
        bytes = bytes.subarray(cut);
      }
      carry = bytes.toString('utf8');
    }
  }
  carry += decoder.end();
  if (carry.length > 0) await emitLines(carry, emit);
  return total;
}

/**
 * Whole lines (joined by `\n`, without the last one's) as few events as the bound allows: each event the most
 * whole lines that fit in `MAX_LINE_BYTES` of UTF-8; a line longer than that alone, cut into pieces of at most
 * the bound, each on a character's boundary.
 */
async function emitLines(block: string, emit: (m: string) => Promise<void>): Promise<void> {
  // (a UTF-16 unit is at most 3 bytes of UTF-8: a short block is sent as it is, a longer one encoded once)
  if (block.length * 3 <= MAX_LINE_BYTES) return emit(block);
  let bytes = Buffer.from(block, 'utf8');
  if (bytes.length <= MAX_LINE_BYTES) return emit(block);
  while (bytes.length > MAX_LINE_BYTES) {
    // The last line break within the bound ends this event; with none, the line is cut at the bound.
    const nl = bytes.lastIndexOf(0x0a, MAX_LINE_BYTES);
    if (nl >= 0) {
      await emit(bytes.toString('utf8', 0, nl));
      bytes = bytes.subarray(nl + 1);
    } else {
      const cut = characterBoundary(bytes, MAX_LINE_BYTES);
      await emit(bytes.toString('utf8', 0, cut));
      bytes = bytes.subarray(cut);
    }
  }
  await emit(bytes.toString('utf8'));
}

/** The last offset at or before `at` that does not fall inside a UTF-8 character of `bytes`. */
function characterBoundary(bytes: Buffer, at: number): number {
  let cut = at;
  while (cut > 0 && ((bytes[cut] ?? 0) & 0xc0) === 0x80) cut--; // a continuation byte: inside a character
  return cut;
}
