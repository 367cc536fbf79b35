// A command's output → log events (src/output.ts): each event holds the whole lines one read brought, as many as
// fit in MAX_LINE_BYTES, so `yes` is not one event per two bytes; a longer line is cut into pieces on character
// boundaries; nothing is lost, reordered or invented, however the stream is chunked (fast-check).
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Journal } from '../src/journal.js';
import { MAX_LINE_BYTES, pumpOutput, Tail } from '../src/output.js';

/** Characters of 1, 2, 3 and 4 bytes in UTF-8. */
const WIDTHS = ['a', 'é', '€', '😀'];

/** The messages `pumpOutput` appends for `chunks` read in that order. */
async function pumped(chunks: Buffer[]): Promise<string[]> {
  const messages: string[] = [];
  const journal = {
    append: async (e: { message?: unknown }) => {
      messages.push(String(e.message));
    },
  } as unknown as Journal;
  await pumpOutput(Readable.from(chunks), 'stdout', journal, new Tail());
  return messages;
}

/** `text`'s UTF-8 bytes cut at `cuts` (byte offsets: a character may be split across two reads). */
function chunked(text: string, cuts: number[]): Buffer[] {
  const bytes = Buffer.from(text, 'utf8');
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let from = 0;
  for (const c of [...at, bytes.length]) {
    if (c > from) out.push(bytes.subarray(from, c));
    from = Math.max(from, c);
  }
  return out;
}

const lines = (maxLine: number) =>
  fc
    .array(fc.string({ unit: fc.constantFrom('a', 'é', '€', '😀', 'z', ' '), maxLength: maxLine }), {
      minLength: 1,
      maxLength: 40,
    })
    .map((ls) => ls.join('\n'));

describe('pumpOutput', () => {
  it('a read of many short lines is one event: `yes` is not an event per line', async () => {
    const text = 'y\n'.repeat(20_000); // 40,000 bytes: three events of whole lines at most
    const messages = await pumped([Buffer.from(text)]);
    expect(messages.length).toBeLessThanOrEqual(Math.ceil(text.length / MAX_LINE_BYTES));
    expect(`${messages.join('\n')}\n`).toBe(text);
    for (const m of messages) expect(Buffer.byteLength(m)).toBeLessThanOrEqual(MAX_LINE_BYTES);
  });

  it('lines within the bound come back exactly, however the stream is chunked', async () => {
    await fc.assert(
      fc.asyncProperty(
        lines(200),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 12 }),
        async (body, nl, cuts) => {
          const text = nl ? `${body}\n` : body;
          const messages = await pumped(chunked(text, cuts));
          // (a text ending in a line break has no last, empty, line of its own)
          expect(`${messages.join('\n')}${text.endsWith('\n') ? '\n' : ''}`).toBe(text);
          for (const m of messages) expect(Buffer.byteLength(m)).toBeLessThanOrEqual(MAX_LINE_BYTES);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a line past the bound is cut into pieces of at most the bound, on character boundaries, nothing lost', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc
            .tuple(fc.integer({ min: 0, max: MAX_LINE_BYTES }), fc.nat())
            .map(([n, seed]) =>
              Array.from({ length: n }, (_, i) => WIDTHS[(i * seed + (i >> 3)) % 4]).join(''),
            ),
          { minLength: 1, maxLength: 4 },
        ),
        fc.array(fc.nat(), { maxLength: 8 }),
        async (lineList, cuts) => {
          // Mixed widths (1 to 4 bytes): a cut at the bound falls inside a character as often as not.
          const text = lineList.join('\n');
          const messages = await pumped(chunked(text, cuts));
          for (const m of messages) {
            expect(Buffer.byteLength(m)).toBeLessThanOrEqual(MAX_LINE_BYTES);
            expect(m).not.toContain('\uFFFD'); // no character split between two events
          }
          expect(messages.join('').replace(/\n/g, '')).toBe(text.replace(/\n/g, ''));
        },
      ),
      { numRuns: 60 },
    );
  });
});
