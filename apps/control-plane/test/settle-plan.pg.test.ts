// The settle's write reaches its runs through runs_pkey whatever the table's size when its generic plan was
// made. A prepared statement's generic plan is built once per pooled connection — on a fresh database while
// `runs` holds a few dozen rows — and kept until the table is ANALYZEd. Joined to its batch alone (a
// jsonb_to_recordset the planner takes for 100 rows), the UPDATE was planned as a sequential scan of `runs`
// (cheaper than 100 index probes on a small table) and kept scanning the whole table as it grew; with
// `id = ANY(<the batch's ids>)` it is an index scan from a few pages on. Live PostgreSQL only.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Core, startCore } from '../src/core.js';
import { openDatabase } from '../src/db/database.js';
import { type Finished, settleMany } from '../src/scheduler/batch-transitions.js';
import { claimAndStart } from '../src/scheduler/claim-start.js';
import { INLINE_KINDS } from '../src/scheduler/dispatch-loop.js';
import { announceSkippedLiveSuite, createLiveDatabase, LIVE_PG } from './db.js';

announceSkippedLiveSuite('test/settle-plan.pg.test.ts');
const KEY = 'evk_settle_plan_test_key_0000000000';
const RUNS = 200;

describe.runIf(LIVE_PG)("the settle write's plan", () => {
  let live: Awaited<ReturnType<typeof createLiveDatabase>>;
  let core: Core;
  let one: Awaited<ReturnType<typeof openDatabase>>;

  beforeAll(async () => {
    live = await createLiveDatabase();
    core = await startCore({
      databaseUrl: live.url,
      bootstrapKey: KEY,
      policy: { maxConcurrent: 1_000, maxQueued: 10_000 },
      scheduler: { enabled: false },
    });
    one = await openDatabase({ databaseUrl: live.url, poolSize: 1 });
  }, 60_000);

  afterAll(async () => {
    await one?.close();
    await core?.close();
    await live?.drop();
  });

  it('is an index scan of runs (runs_pkey), not a scan of the whole table', async () => {
    const admin = await core.services.auth.authenticate(KEY);
    const spec = { kind: 'analysis', subject: { config: { fn: 'echo', message: 'p' } } } as const;
    for (let i = 0; i < RUNS / 20; i++)
      await Promise.all(Array.from({ length: 20 }, () => core.services.runs.create(admin, spec)));
    const started = await claimAndStart(core.internals.deps.db, 3, new Date(), INLINE_KINDS);
    expect(started).toHaveLength(3);
    // The one pooled connection plans generically from its first use on (as after five custom plans).
    await sql`SET plan_cache_mode = force_generic_plan`.execute(one.db);
    const finished = started.map(
      (s): Finished => ({
        tenant: s.tenant,
        runId: s.runId,
        event: { type: 'succeed' },
        extras: { outputs: { summary: 'ok', exitCode: 0 } },
      }),
    );
    expect(await settleMany(one.db, core.internals.deps, finished)).toHaveLength(3);
    const { rows } = await sql<{ name: string; n: number }>`
      SELECT name, cardinality(parameter_types) AS n FROM pg_prepared_statements
      WHERE name LIKE 'settle_write_%'`.execute(one.db);
    expect(rows).toHaveLength(1);
    const { name, n } = rows[0]!;
    const nulls = sql.join(Array.from({ length: n }, () => sql`NULL`));
    const plan = await sql<{ 'QUERY PLAN': string }>`EXPLAIN EXECUTE ${sql.id(name)}(${nulls})`.execute(
      one.db,
    );
    const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
    // The UPDATE's subtree: from its node to the next CTE's header.
    const from = text.indexOf('Update on runs');
    const next = text.slice(from).search(/\n\s*CTE (?!Scan)/);
    const update = text.slice(from, next < 0 ? undefined : from + next);
    expect(update).toContain('runs_pkey');
    expect(update).not.toMatch(/Seq Scan on runs/);
  }, 60_000);
});
