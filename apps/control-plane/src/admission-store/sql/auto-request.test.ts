// A create without a request id is admitted under its own fresh run id (`auto:<runId>`), which no later
// request can repeat: its decision is not recorded (migration 0022's notes). A caller's request id still is,
// and a repeat still returns the first run; a caller's id may not start with the reserved `auto:`.
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { type TestCore, testCore } from '../../../test/core.js';

const echo = { kind: 'analysis', subject: { config: { fn: 'echo', message: 'x' } } } as const;

describe('admission records: only callers’ request ids', () => {
  let t: TestCore;
  afterEach(async () => t.close());

  it('records a caller’s request id once and no auto one; a repeat is the first run', async () => {
    t = await testCore({ scheduler: { enabled: false } });
    const db = t.core.internals.deps.db;
    const runs = t.core.services.runs;
    const [a, b] = await Promise.all([runs.create(t.admin, echo), runs.create(t.admin, echo)]);
    const c = await runs.create(t.admin, { ...echo, requestId: 'req-1' });
    const again = await runs.create(t.admin, { ...echo, requestId: 'req-1' });
    expect(again.run.id).toBe(c.run.id);
    expect(again.admission.decision).toBe('duplicate');
    const rows = await sql<{ request_id: string; run_id: string }>`
      SELECT request_id, run_id FROM adm_admissions ORDER BY request_id`.execute(db);
    expect(rows.rows).toEqual([{ request_id: 'req-1', run_id: c.run.id }]);
    // `auto:` is reserved: a client's "auto:…" id is refused before the gate, and nothing is written.
    const before = await sql<{ n: string }>`SELECT count(*) AS n FROM runs`.execute(db);
    await expect(runs.create(t.admin, { ...echo, requestId: `auto:${a.run.id}` })).rejects.toMatchObject({
      httpStatus: 400,
    });
    const after = await sql<{ n: string }>`SELECT count(*) AS n FROM runs`.execute(db);
    expect(after.rows[0]!.n).toBe(before.rows[0]!.n);
    expect([a.run.id, b.run.id]).toHaveLength(2);
  });
});
