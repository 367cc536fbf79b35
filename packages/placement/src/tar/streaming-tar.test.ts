// The streamed archive is the canonical one: byte for byte what `writeTar` writes for the same files, however
// their bytes arrive (property), gathered into pieces; and it never ends whole when a file's bytes are not its
// declared size, cannot be read, or two files share a path.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isPlacementError } from '../errors.js';
import { PIECE_BYTES, type StreamedFile, streamedTarLength, streamTar } from './streaming-tar.js';
import { readTar } from './tar-reader.js';
import { writeTar } from './tar-writer.js';

async function collect(
  files: StreamedFile[],
  readAhead?: number,
): Promise<{ bytes: Uint8Array; pieces: number[] }> {
  const pieces: Uint8Array[] = [];
  for await (const piece of streamTar(files, { readAhead })) pieces.push(piece);
  return { bytes: new Uint8Array(Buffer.concat(pieces)), pieces: pieces.map((p) => p.byteLength) };
}

/** `data` as an iterable of pieces cut at `cuts` (offsets, any order). */
async function* cutInto(data: Uint8Array, cuts: number[]): AsyncGenerator<Uint8Array> {
  let at = 0;
  for (const c of [...new Set(cuts.map((x) => x % (data.byteLength + 1)))].sort((a, b) => a - b)) {
    if (c > at) yield data.subarray(at, c);
    at = Math.max(at, c);
  }
  if (at < data.byteLength) yield data.subarray(at);
}

const file = (path: string, data: Uint8Array, cuts: number[] = [], mode = 0o644): StreamedFile => ({
  path,
  mode,
  size: data.byteLength,
  open: () => cutInto(data, cuts),
});

describe('streamTar', () => {
  const part = fc
    .oneof(fc.stringMatching(/^[a-z0-9._-]{1,30}$/), fc.constantFrom('ünï', '日本', 'y'.repeat(101)))
    .filter((s) => s !== '.' && s !== '..');
  const entry = fc.record({
    path: fc.array(part, { minLength: 1, maxLength: 5 }).map((xs) => xs.join('/')),
    mode: fc.integer({ min: 0, max: 0o7777 }),
    size: fc.oneof(fc.constantFrom(0, 1, 511, 512, 513, PIECE_BYTES, PIECE_BYTES + 1), fc.nat(5000)),
    cuts: fc.array(fc.nat(200_000), { maxLength: 6 }),
  });
  // A path that is a prefix of another (`a` and `a/b`) cannot both be files on disk, but an archive of run
  // artifacts is only a list of names: the writer takes them as they are.
  it("writes exactly writeTar's bytes for the same files, however their bytes are cut (property)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(entry, { selector: (e) => e.path, maxLength: 10 }), async (raw) => {
        const datas = raw.map((r, i) => new Uint8Array(r.size).map((_, j) => (i * 31 + j) & 0xff));
        const streamed = await collect(raw.map((r, i) => file(r.path, datas[i]!, r.cuts, r.mode)));
        const whole = await writeTar(
          raw.map((r, i) => ({ type: 'file' as const, path: r.path, mode: r.mode, data: datas[i]! })),
        );
        expect(Buffer.from(streamed.bytes).equals(Buffer.from(whole))).toBe(true);
        // Its length is known before a byte is read (a Content-Length).
        expect(streamedTarLength(raw.map((r, i) => file(r.path, datas[i]!, [], r.mode)))).toBe(
          whole.byteLength,
        );
      }),
      { numRuns: 150 },
    );
  });

  it('gathers many small files into few pieces, and passes a large piece on as it is', async () => {
    const small = Array.from({ length: 500 }, (_, i) =>
      file(`f${i}.txt`, new TextEncoder().encode(`file ${i}`)),
    );
    const { bytes, pieces } = await collect(small);
    expect(bytes.byteLength).toBe(500 * 1024 + 1024);
    expect(pieces.length).toBeLessThanOrEqual(Math.ceil(bytes.byteLength / PIECE_BYTES) + 1);
    expect((await readTar(bytes)).map((e) => e.path)).toHaveLength(500);
    const big = new Uint8Array(3 * PIECE_BYTES).fill(7);
    const one = await collect([file('big.bin', big, [PIECE_BYTES, 2 * PIECE_BYTES])]);
    expect(one.pieces).toEqual([512, PIECE_BYTES, PIECE_BYTES, PIECE_BYTES, 1024]);
  });

  it('an empty list is the two end blocks', async () => {
    const { bytes } = await collect([]);
    expect(bytes).toEqual(new Uint8Array(1024));
  });

  it('never ends whole: a short or long file, a failed read, a path twice or out of form', async () => {
    const data = new TextEncoder().encode('twelve bytes');
    const failing: StreamedFile = {
      path: 'broken',
      mode: 0o644,
      size: 3,
      open: async function* () {
        yield new Uint8Array(1);
        throw new Error('the store went away');
      },
    };
    const cases: [string, StreamedFile[], (e: unknown) => boolean][] = [
      ['short', [{ ...file('a', data), size: 13 }], (e) => isPlacementError(e, 'snapshot_mismatch')],
      ['long', [{ ...file('a', data), size: 11 }], (e) => isPlacementError(e, 'snapshot_mismatch')],
      ['a failed read', [file('a', data), failing], (e) => (e as Error).message === 'the store went away'],
      ['a path twice', [file('a', data), file('./a', data)], (e) => isPlacementError(e, 'snapshot_mismatch')],
      ['out of form', [file('../a', data)], (e) => isPlacementError(e, 'snapshot_mismatch')],
    ];
    for (const [why, files, expected] of cases) {
      const got: Uint8Array[] = [];
      const error = await (async () => {
        for await (const piece of streamTar(files)) got.push(piece);
      })().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error !== undefined && expected(error), why).toBe(true);
      // No end blocks went out: what a reader has is not a whole archive.
      const sent = Buffer.concat(got);
      expect(sent.byteLength < 1024 || !sent.subarray(-1024).equals(Buffer.alloc(1024)), why).toBe(true);
    }
  });
});

describe('streamTar reading ahead', () => {
  it('opens up to readAhead files past the one going out, never more, and each once', async () => {
    const opened: number[] = [];
    let finished = 0; // files whose bytes went out whole
    const files: StreamedFile[] = Array.from({ length: 30 }, (_, i) => ({
      path: `f${String(i).padStart(2, '0')}`,
      mode: 0o644,
      size: 1,
      open: () => {
        opened.push(i);
        expect(i).toBeLessThanOrEqual(finished + 3); // the one going out, and three past it
        return (async function* () {
          yield new Uint8Array([i]);
          finished++;
        })();
      },
    }));
    const { bytes } = await collect(files, 3);
    expect(opened).toEqual(Array.from({ length: 30 }, (_, i) => i));
    const whole = await writeTar(
      files.map((f, i) => ({ type: 'file' as const, path: f.path, mode: 0o644, data: new Uint8Array([i]) })),
    );
    expect(Buffer.from(bytes).equals(Buffer.from(whole))).toBe(true);
  });

  it('a file opened ahead that fails fails the archive in its turn; one after an earlier failure goes unread', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      const failing = (path: string, why: string): StreamedFile => ({
        path,
        mode: 0o644,
        size: 1,
        open: () => Promise.reject(new Error(why)),
      });
      const files = [file('a', new Uint8Array([1])), failing('b', 'b is gone'), failing('c', 'c is gone')];
      const error = await (async () => {
        for await (const _ of streamTar(files, { readAhead: 4 }));
      })().catch((e: unknown) => e);
      expect((error as Error).message).toBe('b is gone');
      await new Promise((r) => setImmediate(r)); // past the turn an unhandled rejection is reported in
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
