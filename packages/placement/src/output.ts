// Captured output with a cap, shared by the drivers: the first `cap` bytes are kept, the rest counted.

export class CappedOutput {
  private readonly chunks: Uint8Array[] = [];
  private kept = 0;
  /** Every byte seen, kept or not. */
  total = 0;

  constructor(readonly cap: number) {}

  /** Adds a chunk; returns true when the stream has now passed the cap. */
  push(chunk: Uint8Array): boolean {
    this.total += chunk.byteLength;
    const room = this.cap - this.kept;
    if (room > 0) {
      const part = chunk.byteLength <= room ? chunk : chunk.subarray(0, room);
      this.chunks.push(part);
      this.kept += part.byteLength;
    }
    return this.truncated;
  }

  get truncated(): boolean {
    return this.total > this.cap;
  }

  bytes(): Uint8Array {
    return new Uint8Array(Buffer.concat(this.chunks, this.kept));
  }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function toBytes(data: string | Uint8Array | undefined): Uint8Array {
  if (data === undefined) return new Uint8Array(0);
  return typeof data === 'string' ? encoder.encode(data) : data;
}

/** The bytes as UTF-8 text (invalid sequences become U+FFFD). */
export function utf8(bytes: Uint8Array): string {
  return decoder.decode(bytes);
}
