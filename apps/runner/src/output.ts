// A command's output stream → log events in the journal, line by line (a line longer than `maxLine` bytes
// is cut into several events), while keeping the stream's last `tailBytes` for the run's outputs.
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
    let nl = carry.indexOf('\n');
    while (nl >= 0) {
      await emitCut(carry.slice(0, nl), emit);
      carry = carry.slice(nl + 1);
      nl = carry.indexOf('\n');
    }
    while (Buffer.byteLength(carry) > MAX_LINE_BYTES) {
      const piece = carry.slice(0, MAX_LINE_BYTES / 4);
      carry = carry.slice(piece.length);
      await emit(piece);
    }
  }
  carry += decoder.end();
  if (carry.length > 0) await emitCut(carry, emit);
  return total;
}

async function emitCut(line: string, emit: (m: string) => Promise<void>): Promise<void> {
  if (Buffer.byteLength(line) <= MAX_LINE_BYTES) return emit(line);
  for (let i = 0; i < line.length; i += MAX_LINE_BYTES / 4) await emit(line.slice(i, i + MAX_LINE_BYTES / 4));
}
