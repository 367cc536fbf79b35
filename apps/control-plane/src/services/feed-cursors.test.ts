// The live feed's two cursors as a pure state machine: what the settled cursor delivers late, and what it
// knows the id cursor delivered or will deliver.
import { describe, expect, it } from 'vitest';
import { FeedCursors } from './feed-cursors.js';

const start = { xmin: 100n, xmax: 105n, running: new Set([102n]) };

describe('FeedCursors', () => {
  it('delivers late what the id cursor skipped, and nothing twice', () => {
    const c = new FeedCursors(10n, start);
    c.read({ tx: 103n, id: 11n });
    c.read({ tx: 104n, id: 13n });
    expect(c.pending).toBe(2);
    // Settled, in (tx, id) order:
    expect(c.settle({ tx: 101n, id: 8n })).toBe(false); // visible at the start, below its cursor
    expect(c.settle({ tx: 102n, id: 9n })).toBe(true); // running at the start: new to this feed
    expect(c.settle({ tx: 103n, id: 11n })).toBe(false); // the id cursor delivered it
    expect(c.settle({ tx: 104n, id: 12n })).toBe(true); // behind the id cursor, never read: late
    expect(c.settle({ tx: 104n, id: 13n })).toBe(false);
    expect(c.pending).toBe(0);
    // Ahead of the id cursor: it reads it, and knows the settled cursor passed it.
    expect(c.settle({ tx: 106n, id: 14n })).toBe(false);
    c.read({ tx: 106n, id: 14n });
    expect(c.pending).toBe(0);
    expect(c.after).toBe('14');
    expect(c.settled).toEqual({ tx: '106', id: '14' });
  });

  it('a fact visible at the start from a transaction at or past xmax is new', () => {
    const c = new FeedCursors(10n, start);
    expect(c.settle({ tx: 104n, id: 6n })).toBe(false); // committed before the start (below xmax, not running)
    expect(c.settle({ tx: 105n, id: 5n })).toBe(true); // began at or after the start's xmax
  });
});
