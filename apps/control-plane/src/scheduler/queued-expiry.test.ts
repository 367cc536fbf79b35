// A queued run whose expiry (`ttlSec`) passes while nothing can claim it fails `expired` at its expiry — the
// dispatch loop's sweep — not when capacity at last reaches it: no interval, the record closed, its queue entry
// and the tenant's queued count released; a run without a TTL, or with a later one, stays queued. The scan's two
// modes (a process's first scan over the queues, then the expiry index's range) and the re-check under lock.
// On the real core (PGlite), with the dispatch loop running and no runner (command runs stay queued).
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../test/core.js';
import { ADMIN_KEY, call, commandRun, type TestApp, testApp } from '../http/testing/harness.js';
import { failExpiredQueued, nextQueuedExpiry, scanExpiredQueued } from './queued-expiry.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ scheduler: { pollMs: 50, inlineTimeoutMs: 2_000 } });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const create = (spec: Record<string, unknown>) => commandRun(t.app, spec);
const get = async (id: string) => (await call(t.app, 'GET', `/runs/${id}`, { key: ADMIN_KEY })).body;
const queuedIds = async () =>
  (
    await sql<{ run_id: string }>`SELECT run_id FROM adm_queue WHERE tenant = 'default'`.execute(
      t.core.internals.deps.db,
    )
  ).rows.map((r) => r.run_id);
const queuedCount = async () =>
  Number(
    (
      await sql<{ queued: number }>`SELECT queued FROM adm_tenants WHERE tenant = 'default'`.execute(
        t.core.internals.deps.db,
      )
    ).rows[0]?.queued,
  );

describe('a queued run past its expiry', () => {
  it('fails `expired` at its expiry, nothing claiming it; the runs without one or with a later one stay queued', async () => {
    const expiring = await create({ ttlSec: 1 });
    const later = await create({ ttlSec: 3600 });
    const forever = await create({});
    expect(expiring.status).toBe('queued');
    const before = await queuedCount();
    const run = await eventually(async () => {
      const r = await get(expiring.id);
      return r.status === 'failed' ? r : undefined;
    }, 15_000);
    expect(run).toMatchObject({
      status: 'failed',
      error: { code: 'expired', retryable: false },
      outputs: { summary: `its TTL ran out while it was queued (expiresAt ${expiring.expiresAt})` },
    });
    // Failed at its expiry, not long after: within a few sweep ticks of it.
    expect(Date.parse(run.settledAt as string) - Date.parse(expiring.expiresAt ?? '')).toBeLessThan(5_000);
    const rec = (await call(t.app, 'GET', `/runs/${expiring.id}/record`, { key: ADMIN_KEY })).body;
    expect(rec.verify).toMatchObject({ ok: true });
    expect((rec.wire as { segments: { kind: string }[] }).segments.map((s) => s.kind)).toEqual(['closed']);
    // Its place in the queue is given back; the others keep theirs.
    const queued = await queuedIds();
    expect(queued).not.toContain(expiring.id);
    expect(queued).toEqual(expect.arrayContaining([later.id, forever.id]));
    expect(await queuedCount()).toBe(before - 1);
    expect((await get(later.id)).status).toBe('queued');
    expect((await get(forever.id)).status).toBe('queued');
  }, 60_000);

  it("scans a process's first look over the queues, then the expiry index since the last; re-checks under lock", async () => {
    const deps = t.core.internals.deps;
    const a = await create({ ttlSec: 7200 });
    const aAt = Date.parse(a.expiresAt ?? '');
    // As a clock past its expiry reads them: found by the first scan (the queues) and by a range that holds it.
    expect((await scanExpiredQueued(deps, aAt + 1, null)).map((r) => r.id)).toContain(a.id);
    expect((await scanExpiredQueued(deps, aAt + 1, aAt - 1)).map((r) => r.id)).toEqual([a.id]);
    // A range that starts after it does not hold it; nor does a clock before it.
    expect(await scanExpiredQueued(deps, aAt + 10, aAt)).toEqual([]);
    expect((await scanExpiredQueued(deps, aAt - 1, null)).map((r) => r.id)).not.toContain(a.id);
    expect(await nextQueuedExpiry(deps, aAt - 1)).toBe(aAt);
    // The re-check under lock: a scan's answer acted on before the clock reaches it fails nothing; a run that
    // is no longer queued (settled) is left as it is.
    const scanned = await scanExpiredQueued(deps, aAt + 1, aAt - 1);
    expect(await failExpiredQueued(deps, scanned, aAt - 1)).toEqual([]);
    expect((await get(a.id)).status).toBe('queued');
    await call(t.app, 'POST', `/runs/${a.id}/cancel`, { key: ADMIN_KEY });
    expect(await failExpiredQueued(deps, scanned, aAt + 1)).toEqual([]);
    expect((await get(a.id)).status).toBe('cancelled');
    // And one still queued, past its expiry by the clock given, is failed.
    const b = await create({ ttlSec: 7200 });
    const bAt = Date.parse(b.expiresAt ?? '');
    const found = await scanExpiredQueued(deps, bAt + 1, bAt - 1);
    expect(await failExpiredQueued(deps, found, bAt + 1)).toEqual([b.id]);
    expect(await get(b.id)).toMatchObject({ status: 'failed', error: { code: 'expired' } });
  }, 60_000);
});
