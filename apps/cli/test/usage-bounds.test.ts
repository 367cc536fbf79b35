// Usage errors the CLI can tell before any call: exit 2 with a line saying why — not a call the control
// plane refuses (3) or, with nothing listening, `unavailable` (4). The URL here has nothing listening, so a
// call made anyway would be exit 4.
import { describe, expect, it } from 'vitest';
import { everdict } from './capture.js';

const NOWHERE = { EVERDICT_URL: 'http://127.0.0.1:1', EVERDICT_API_KEY: 'evd_x' };

describe('runs --limit', () => {
  it.each(['0', '501', '1000'])(
    '--limit %s (outside 1–500, the page bounds of GET /runs) is exit 2',
    async (n) => {
      const r = await everdict(['runs', '--limit', n], NOWHERE);
      expect(r.err).toBe('usage: --limit is a whole number from 1 to 500\n');
      expect(r.code).toBe(2);
    },
  );

  it('--limit 500 is asked for (here: nothing listens, exit 4)', async () => {
    const r = await everdict(['runs', '--limit', '500'], NOWHERE);
    expect(r.code).toBe(4);
  });
});
