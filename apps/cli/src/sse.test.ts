import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SseParser } from './sse.js';

const stream = 'id: 1\nevent: run.queued\ndata: {"a":1}\n\n: keep-alive\n\nevent: end\ndata: x\ndata: y\n\n';

describe('SseParser', () => {
  it('parses events, skips comments, joins data lines', () => {
    expect(new SseParser().push(stream)).toEqual([
      { id: '1', event: 'run.queued', data: '{"a":1}' },
      { id: '1', event: 'end', data: 'x\ny' },
    ]);
  });

  it('gives the same events however the bytes are split (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: stream.length }), { maxLength: 8 }), (cuts) => {
        const points = [...new Set(cuts)].sort((a, b) => a - b);
        const p = new SseParser();
        const out = [];
        let from = 0;
        for (const at of [...points, stream.length]) {
          out.push(...p.push(stream.slice(from, at)));
          from = at;
        }
        expect(out).toEqual(new SseParser().push(stream));
      }),
    );
  });
});
