// Sessions across two replicas (two cores, one live PostgreSQL, one host's process driver state): the
// session caps hold under 50 concurrent POST /sandboxes split over both replicas, a terminal ticket is
// redeemed exactly once whichever replica is asked, and either replica's reaper settles a due session once.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/db/database.js';
import { call } from '../src/http/testing/harness.js';
import { announceSkippedLiveSuite, createLiveDatabase, LIVE_PG } from './db.js';
import {
  passableDir,
  SESSION_ADMIN_KEY,
  type SessionTestApp,
  sandboxRuns,
  sessionTestApp,
} from './sessions.js';

announceSkippedLiveSuite('test/sessions.pg.test.ts');

describe.runIf(LIVE_PG)('sessions on two replicas of one PostgreSQL', () => {
  let live: Awaited<ReturnType<typeof createLiveDatabase>>;
  let a: SessionTestApp;
  let b: SessionTestApp;
  const host = LIVE_PG ? passableDir('cp-sessions-host-') : '';

  beforeAll(async () => {
    live = await createLiveDatabase();
    const shared = { stateDir: path.join(host, 'state'), dataDir: path.join(host, 'data'), sweep: false };
    a = await sessionTestApp({
      ...shared,
      database: await openDatabase({ databaseUrl: live.url, poolSize: 12 }),
    });
    b = await sessionTestApp({
      ...shared,
      database: await openDatabase({ databaseUrl: live.url, poolSize: 12 }),
    });
  }, 240_000);

  afterAll(async () => {
    await a?.close();
    await b?.close();
    await live?.drop();
  });

  it('50 concurrent POST /sandboxes across both replicas admit exactly the tenant cap; the rest are 429', async () => {
    const key = await a.tenant('burst', { session: { maxSessions: 7, memberReserve: 0 } });
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        call((i % 2 ? a : b).app, 'POST', '/sandboxes', { key, body: { ttlSec: 300, idleTimeoutSec: 300 } }),
      ),
    );
    const statuses = results.map((r) => r.status);
    const odd = JSON.stringify(
      results.filter((r) => r.status !== 201 && r.status !== 429).map((r) => r.body),
    );
    expect(
      statuses.filter((s) => s === 201),
      odd,
    ).toHaveLength(7);
    expect(
      statuses.filter((s) => s !== 201).every((s) => s === 429),
      JSON.stringify(results.filter((r) => r.status !== 201 && r.status !== 429).map((r) => r.body)),
    ).toBe(true);
    const db = a.core.internals.deps.db;
    const rows = await db.selectFrom('sessions').select('run_id').where('tenant_id', '=', 'burst').execute();
    expect(rows).toHaveLength(7);
    const pool = await db
      .selectFrom('adm_tenants')
      .select('sessions')
      .where('tenant', '=', 'burst')
      .executeTakeFirstOrThrow();
    expect(pool.sessions).toBe(7);
    const running = await db.selectFrom('runs').select('id').where('tenant_id', '=', 'burst').execute();
    expect(running).toHaveLength(7); // a refusal left no run behind
    const ids = rows.map((r) => r.run_id);
    expect(sandboxRuns(a.stateDir).filter((id) => ids.includes(id))).toHaveLength(7);
    for (const [i, id] of ids.entries()) {
      const closed = await call((i % 2 ? a : b).app, 'POST', `/sandboxes/${id}/close`, { key });
      expect(closed.status, JSON.stringify(closed.body)).toBe(200);
    }
    const after = await db
      .selectFrom('adm_tenants')
      .select('sessions')
      .where('tenant', '=', 'burst')
      .executeTakeFirstOrThrow();
    expect(after.sessions).toBe(0);
    expect(sandboxRuns(a.stateDir).filter((id) => ids.includes(id))).toEqual([]);
  }, 240_000);

  it('a ticket is redeemed exactly once, on whichever replica; the other refuses it', async () => {
    const opened = await call(a.app, 'POST', '/sandboxes', {
      key: SESSION_ADMIN_KEY,
      body: { ttlSec: 300, idleTimeoutSec: 300 },
    });
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    const id = (opened.body.run as { id: string }).id;
    const minted = await call(a.app, 'POST', `/runs/${id}/terminal-ticket`, { key: SESSION_ADMIN_KEY });
    const ticket = minted.body.ticket as string;
    const tries = await Promise.allSettled([
      a.core.services.sessions!.redeemTerminal(id, ticket),
      b.core.services.sessions!.redeemTerminal(id, ticket),
      b.core.services.sessions!.redeemTerminal(id, ticket),
      a.core.services.sessions!.redeemTerminal(id, ticket),
    ]);
    expect(tries.filter((x) => x.status === 'fulfilled')).toHaveLength(1);
    for (const x of tries.filter((y) => y.status === 'rejected'))
      expect(String((x as PromiseRejectedResult).reason.code)).toBe('invalid_terminal_ticket');
    await call(b.app, 'POST', `/sandboxes/${id}/close`, { key: SESSION_ADMIN_KEY });
  }, 120_000);

  it('both replicas sweep at once: a due session is settled exactly once', async () => {
    const opened = await call(a.app, 'POST', '/sandboxes', {
      key: SESSION_ADMIN_KEY,
      body: { ttlSec: 1, idleTimeoutSec: 300 },
    });
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    const id = (opened.body.run as { id: string }).id;
    const db = a.core.internals.deps.db;
    await db
      .updateTable('sessions')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('run_id', '=', id)
      .execute();
    const [x, y] = await Promise.all([a.core.sessions!.reaper.sweep(), b.core.sessions!.reaper.sweep()]);
    expect([...x, ...y].filter((r) => r === id)).toHaveLength(1);
    const run = await call(b.app, 'GET', `/runs/${id}`, { key: SESSION_ADMIN_KEY });
    expect(run.body).toMatchObject({ status: 'succeeded', outputs: { result: { endReason: 'expired' } } });
    const segments = await db.selectFrom('record_segments').select('kind').where('run_id', '=', id).execute();
    expect(segments.filter((s) => s.kind === 'closed')).toHaveLength(1);
  }, 120_000);
});
