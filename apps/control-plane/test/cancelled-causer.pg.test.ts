// A child admitted while its tree is being cancelled, on live PostgreSQL (PGlite has one connection): it is
// either refused (409 causer_cancelled) or in the tree the cascade walks — never queued under a cancelled run.
// The create's commit locks its causal chain and re-reads it (admission-store/sql/causal-tree.ts): a create
// that decided on a live tree but commits after the cancel is refused, and a cancel of any run on a held chain
// waits for the create to commit. Each pause is a lock wait watched in pg_stat_activity, never a sleep.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTx } from '../src/db/tx.js';
import { ControlPlaneError } from '../src/errors.js';
import { transitionTx } from '../src/services/lifecycle.js';
import { type TestCore, testCore } from './core.js';
import { announceSkippedLiveSuite, LIVE_PG } from './db.js';
import { lockWaits } from './lock-waits.js';

announceSkippedLiveSuite('test/cancelled-causer.pg.test.ts');

const CMD = { kind: 'command', subject: { path: 'x', image: 'alpine:3.20', command: ['true'] } };

describe.runIf(LIVE_PG)('a child created while its causal tree is cancelled', () => {
  let t: TestCore;
  let watch: pg.Client;

  beforeAll(async () => {
    t = await testCore({ poolSize: 8, scheduler: { enabled: false } });
    watch = new pg.Client({ connectionString: t.database.url });
    await watch.connect();
  }, 120_000);

  afterAll(async () => {
    await watch?.end();
    await t?.close();
  });

  const who = () => ({ tenant: t.admin.tenantId, actor: t.admin.actor });
  const create = async (causedByRunId?: string) =>
    (await t.core.services.runs.create(t.admin, CMD, causedByRunId ? { causedByRunId } : {})).run.id;
  const statusOf = async (id: string) => (await t.core.services.runs.get(t.admin, id)).status;
  const failed = async (id: string) => {
    const deps = t.core.internals.deps;
    await withTx(deps.db, (tx) =>
      transitionTx(tx, deps, who().tenant, id, { type: 'fail', error: { code: 'x', message: 'failed' } }),
    );
  };

  it('a create past its re-check holds its chain: the ancestor’s cancel waits, then the cascade takes it', async () => {
    const root = await create();
    const done = await create(root);
    await failed(done);
    // A third connection holds the create's idempotency record (uncommitted): the create decides, passes the
    // chain's re-check, and waits at its commit's insert of that record.
    const requestId = `rq-${root}`;
    const locker = new pg.Client({ connectionString: t.database.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(
        `INSERT INTO adm_admissions (tenant, request_id, run_id, decision) VALUES ($1, $2, 'held', '{}'::jsonb)`,
        [who().tenant, requestId],
      );
      let settled = false;
      const late = t.core.services.runs
        .create(t.admin, { ...CMD, requestId }, { causedByRunId: done })
        .finally(() => {
          settled = true;
        });
      await lockWaits(watch, 1, () => settled);
      let cancelled = false;
      const cancelling = t.core.services.runs.cancel(t.admin, root).finally(() => {
        cancelled = true;
      });
      // Fixed: the cancel waits for the create (the root's slot, held FOR SHARE on the create's chain). Before,
      // it committed, and its cascade was done before the create committed its child.
      await lockWaits(watch, 2, () => cancelled);
      await locker.query('ROLLBACK');
      const child = (await late).run.id;
      const result = await cancelling;
      expect(result.cancelled).toContain(child);
      expect(await statusOf(child)).toBe('cancelled');
    } finally {
      await locker.end();
    }
  }, 60_000);

  it('a create that read its tree alive and commits after the cancel and its cascade are done: refused', async () => {
    const root = await create();
    const done = await create(root);
    const deps = t.core.internals.deps;
    await failed(done);
    const before = await deps.db
      .selectFrom('runs')
      .select('id')
      .where('caused_by_run_id', '=', done)
      .execute();
    // A third connection holds the finished causer's slot: the create decides (its tree alive), then waits at
    // its commit's first lock of that slot — while the root is cancelled and its cascade completes.
    const locker = new pg.Client({ connectionString: t.database.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('SELECT 1 FROM adm_slots WHERE tenant = $1 AND run_id = $2 FOR SHARE', [
        who().tenant,
        done,
      ]);
      let settled = false;
      const late = create(done).then(
        (id) => ({ id }),
        (e: unknown) => ({ error: e }),
      );
      void late.finally(() => {
        settled = true;
      });
      await lockWaits(watch, 1, () => settled);
      expect(settled).toBe(false);
      const { cancelled } = await t.core.services.runs.cancel(t.admin, root);
      expect(cancelled).toEqual([root]);
      await locker.query('ROLLBACK');
      const outcome = await late;
      // Fixed: its commit re-reads the chain under lock, answers `raced`, and the gate, deciding again,
      // refuses. Before, it committed a queued child under a cancelled root whose cascade was already done.
      expect(outcome).toMatchObject({ error: { code: 'causer_cancelled' } });
      const after = await deps.db
        .selectFrom('runs')
        .select('id')
        .where('caused_by_run_id', '=', done)
        .execute();
      expect(after).toEqual(before);
    } finally {
      await locker.end();
    }
  }, 60_000);

  it('many children racing their causer’s cancel: each one refused or cancelled, none left queued', async () => {
    for (let round = 0; round < 6; round++) {
      const root = await create();
      const mid = await create(root);
      const outcomes = await Promise.all([
        t.core.services.runs.cancel(t.admin, root).then(() => 'cancel'),
        ...Array.from({ length: 12 }, (_, i) =>
          create(i % 2 === 0 ? root : mid).then(
            (id) => id,
            (e: unknown) => {
              if (e instanceof ControlPlaneError && e.code === 'causer_cancelled') return 'refused';
              throw e;
            },
          ),
        ),
      ]);
      const children = outcomes.filter((o) => o !== 'cancel' && o !== 'refused');
      for (const id of [mid, ...children]) expect(await statusOf(id)).toBe('cancelled');
    }
  }, 120_000);
});
