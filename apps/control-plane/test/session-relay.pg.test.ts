// The session relay's edges on two real cores sharing one live PostgreSQL (runners/sessions/relay.ts): a
// holder that does not hold the runner's channel refuses at once; a stale channel row is refused before any
// frame is written; a holder replica that is gone fails the call with runner_unreachable after `deadMs`, and
// the frames addressed to it are swept once stale. A PGlite core has no relay (one process holds every
// channel). The whole path with a real runner: apps/runner/test/sessions-replicas.pg.test.ts.
import { isPlacementError, type PlacementError } from '@everdict/placement';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Core, startCore } from '../src/core.js';
import { openDatabase } from '../src/db/database.js';
import { until } from '../src/http/testing/harness.js';
import { announceSkippedLiveSuite, createLiveDatabase, LIVE_PG } from './db.js';
import { migratedPglite } from './pglite-template.js';

announceSkippedLiveSuite('test/session-relay.pg.test.ts');

const RELAY = { pollMs: 200, aliveMs: 100, deadMs: 1_500 };

async function refusal(p: Promise<unknown>): Promise<PlacementError> {
  const e = await p.then(
    () => {
      throw new Error('expected a refusal');
    },
    (x: unknown) => x,
  );
  if (!isPlacementError(e)) throw e;
  return e;
}

describe('the session relay is a PostgreSQL part', () => {
  it('a PGlite core has none: every channel is local', async () => {
    const core = await startCore({
      database: await openDatabase({ pglite: await migratedPglite(), migrate: false }),
      sessions: { sweep: false },
      scheduler: { enabled: false },
    });
    try {
      expect(core.sessionHub?.relay).toBeNull();
    } finally {
      await core.close();
    }
  });
});

describe.runIf(LIVE_PG)('the session relay between two replicas of one PostgreSQL', () => {
  let live: Awaited<ReturnType<typeof createLiveDatabase>>;
  let a: Core;
  let b: Core;
  const start = async (replicaId: string) =>
    startCore({
      database: await openDatabase({ databaseUrl: live.url, poolSize: 4 }),
      sessions: { sweep: false },
      scheduler: { enabled: false, replicaId },
      sessionRelay: RELAY,
    });

  beforeAll(async () => {
    live = await createLiveDatabase();
    a = await start('relay-a');
    b = await start('relay-b');
  }, 120_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await live?.drop();
  });

  const db = () => b.internals.deps.db;
  const hubB = () => {
    const h = b.sessionHub;
    if (!h) throw new Error('no hub');
    return h;
  };
  const channelRow = async (runnerId: string, replica: string, seenAt: Date) => {
    await sql`INSERT INTO session_channels (runner_id, replica, driver, images, slots, connected_at, seen_at)
      VALUES (${runnerId}, ${replica}, 'process', '["*"]'::jsonb, 1, ${seenAt}, ${seenAt})
      ON CONFLICT (runner_id) DO UPDATE SET replica = EXCLUDED.replica, seen_at = EXCLUDED.seen_at`.execute(
      db(),
    );
  };
  const framesTo = async (replica: string) =>
    Number(
      (
        await sql<{
          n: string;
        }>`SELECT count(*)::text AS n FROM session_relay WHERE to_replica = ${replica}`.execute(db())
      ).rows[0]?.n,
    );

  it('both replicas relay on PostgreSQL', () => {
    expect(a.sessionHub?.relay?.replica).toBe('relay-a');
    expect(b.sessionHub?.relay?.replica).toBe('relay-b');
  });

  it('a holder that does not hold the channel refuses at once (a call and a stream); no frame is left', async () => {
    await channelRow('rnr_elsewhere', 'relay-a', new Date());
    const link = await hubB().link('rnr_elsewhere');
    const e = await refusal(link.call('held', {}, 60_000));
    expect(e.code).toBe('spawn_failed');
    expect(e.detail).toMatchObject({ reason: 'runner_unreachable', replica: 'relay-a' });
    expect(e.message).toContain('not held here');
    const s = await refusal(link.stream({ handle: {}, cmd: ['sh'], options: {} }));
    expect(s.detail).toMatchObject({ reason: 'runner_unreachable' });
    expect(s.message).toContain('not held here');
    await until('both replicas drained their frames', async () =>
      (await framesTo('relay-a')) + (await framesTo('relay-b')) === 0 ? true : undefined,
    );
    expect(a.sessionHub?.relay?.open).toBe(0);
    expect(b.sessionHub?.relay?.open).toBe(0);
  });

  it('a channel row older than the lease is refused before anything is written', async () => {
    await channelRow('rnr_stale', 'relay-a', new Date(Date.now() - 3_600_000));
    const e = await refusal(hubB().link('rnr_stale'));
    expect(e.detail).toMatchObject({ reason: 'runner_unreachable' });
    expect(await framesTo('relay-a')).toBe(0);
  });

  it('a holder replica that is gone: runner_unreachable after deadMs; its frames swept once stale', async () => {
    await channelRow('rnr_orphaned', 'relay-dead', new Date());
    const link = await hubB().link('rnr_orphaned');
    const e = await refusal(link.call('exec', { cmd: ['true'] }, 60_000));
    expect(e.code).toBe('spawn_failed');
    expect(e.detail).toMatchObject({ reason: 'runner_unreachable', replica: 'relay-dead' });
    expect(e.message).toContain(`no frame from the relaying replica for ${RELAY.deadMs} ms`);
    expect(b.sessionHub?.relay?.open).toBe(0);
    // Nobody reads what was addressed to the dead replica: it stays until it is stale, then any sweep removes it.
    const left = await framesTo('relay-dead');
    expect(left).toBeGreaterThan(0);
    expect(await hubB().relay?.sweep(3_600_000)).toBe(0);
    expect(await framesTo('relay-dead')).toBe(left);
    expect(await hubB().relay?.sweep(0)).toBeGreaterThanOrEqual(left);
    expect(await framesTo('relay-dead')).toBe(0);
  });
});
