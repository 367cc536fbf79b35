// Exec activity marks on a real session row (PGlite): a refused exec's compensation undoes only its own
// start — never another overlapping exec's cover of the idle deadline, whichever order their starts and
// marks took — and, alone, leaves the row as it was.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SESSION_ADMIN_KEY, type SessionTestApp, sessionTestApp } from '../../test/sessions.js';
import { call } from '../http/testing/harness.js';
import { execEnded, execRefused, execStarted } from './rows.js';

let t: SessionTestApp;
beforeAll(async () => {
  t = await sessionTestApp({ sweep: false });
}, 240_000);
afterAll(async () => {
  await t?.close();
});

const IDLE_SEC = 300;
async function openSession(): Promise<string> {
  const r = await call(t.app, 'POST', '/sandboxes', {
    key: SESSION_ADMIN_KEY,
    body: { ttlSec: 3600, idleTimeoutSec: IDLE_SEC },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return (r.body.run as { id: string }).id;
}
const db = () => t.core.internals.deps.db;
/** The row's activity and deadline, and how many command marks count for it (`execs_running`). */
const row = async (id: string) => {
  const s = await db()
    .selectFrom('sessions')
    .select(['last_activity_at', 'idle_deadline'])
    .where('run_id', '=', id)
    .executeTakeFirstOrThrow();
  const marks = await db().selectFrom('session_execs').select('exec_id').where('run_id', '=', id).execute();
  return { ...s, execs_running: marks.length };
};
const at = (base: number, sec: number) => new Date(base + sec * 1000);
const covers = (mark: Date, timeoutMs: number) => mark.getTime() + IDLE_SEC * 1000 + timeoutMs;

describe('a refused exec’s compensation', () => {
  it('does not undo an overlapping exec that started after its mark but before its own start', async () => {
    const id = await openSession();
    const base = Date.now();
    const a = at(base, 1); // A's mark, then A reads the row …
    const before = await row(id);
    const b = at(base, 2); // … B marks, reads and starts (a 10-minute command) …
    await execStarted(db(), 'default', id, 'B', b, 600_000);
    await execStarted(db(), 'default', id, 'A', a, 60_000); // … then A starts, and is refused
    await execRefused(db(), 'default', id, 'A', a, before);
    const after = await row(id);
    expect(after.execs_running).toBe(1);
    expect(after.idle_deadline.getTime()).toBeGreaterThanOrEqual(covers(b, 600_000)); // B still covered
    expect(after.last_activity_at.getTime()).toBe(b.getTime());
    await execEnded(db(), 'default', id, 'B', at(base, 30));
    expect(await row(id)).toMatchObject({ execs_running: 0, idle_deadline: at(base, 30 + IDLE_SEC) });
    await call(t.app, 'POST', `/sandboxes/${id}/close`, { key: SESSION_ADMIN_KEY });
  }, 60_000);

  it('does not undo an overlapping exec marked in the same millisecond', async () => {
    const id = await openSession();
    const mark = at(Date.now(), 1);
    const before = await row(id); // both read the row, then both start
    await execStarted(db(), 'default', id, 'B', mark, 600_000); // B
    await execStarted(db(), 'default', id, 'A', mark, 60_000); // A, refused
    await execRefused(db(), 'default', id, 'A', mark, before);
    const after = await row(id);
    expect(after.execs_running).toBe(1);
    expect(after.idle_deadline.getTime()).toBeGreaterThanOrEqual(covers(mark, 600_000));
    await call(t.app, 'POST', `/sandboxes/${id}/close`, { key: SESSION_ADMIN_KEY });
  }, 60_000);

  it('keeps the traffic of an overlapping exec that ended meanwhile; alone and untouched, leaves the row as it was', async () => {
    const id = await openSession();
    const base = Date.now();
    const a = at(base, 1);
    const before = await row(id);
    await execStarted(db(), 'default', id, 'B', at(base, 2), 600_000); // B starts …
    await execStarted(db(), 'default', id, 'A', a, 60_000); // … A starts …
    await execEnded(db(), 'default', id, 'B', at(base, 3)); // … B ends, A is refused
    await execRefused(db(), 'default', id, 'A', a, before);
    expect(await row(id)).toMatchObject({
      execs_running: 0,
      last_activity_at: at(base, 3),
      idle_deadline: at(base, 3 + IDLE_SEC),
    });

    const alone = await row(id);
    const c = at(base, 10);
    await execStarted(db(), 'default', id, 'C', c, 60_000);
    await execRefused(db(), 'default', id, 'C', c, alone);
    expect(await row(id)).toEqual(alone);
    await call(t.app, 'POST', `/sandboxes/${id}/close`, { key: SESSION_ADMIN_KEY });
  }, 60_000);
});
