// Single writer per run across replicas (live PostgreSQL only: PGlite is one process). Two cores on one
// database, each with its OWN TrajectoryStore over the same directory (two replicas sharing the object
// store), append batches to one run concurrently through `appendDrafts`. Without the advisory lock their
// cached heads go stale and both write at the same offset; with it every batch lands whole, numbered after
// the one before, and the sealed trajectory holds every event once. Runs only with EVERDICT_TEST_DATABASE_URL.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Core, startCore } from '../src/core.js';
import type { Principal } from '../src/services/index.js';
import { openTrajectoryStore } from '../src/trajectory/store.js';
import { OFFLINE_RUNNER } from './core.js';
import { announceSkippedLiveSuite, createLiveDatabase, LIVE_PG } from './db.js';

announceSkippedLiveSuite('test/trajectory-writer.pg.test.ts');
const KEY = 'evk_trajectory_writer_key_000000000';

describe.runIf(LIVE_PG)('one writer per run trajectory across two replicas', { timeout: 300_000 }, () => {
  let live: Awaited<ReturnType<typeof createLiveDatabase>>;
  let a: Core;
  let b: Core;
  let admin: Principal;
  let dir: string;

  beforeAll(async () => {
    live = await createLiveDatabase();
    dir = mkdtempSync(path.join(os.tmpdir(), 'traj-writer-'));
    a = await startCore({
      databaseUrl: live.url,
      bootstrapKey: KEY,
      executors: [OFFLINE_RUNNER],
      scheduler: { enabled: false },
      trajectories: openTrajectoryStore({ dataDir: dir }),
    });
    b = await startCore({
      databaseUrl: live.url,
      bootstrapKey: KEY,
      executors: [OFFLINE_RUNNER],
      scheduler: { enabled: false },
      trajectories: openTrajectoryStore({ dataDir: dir }),
    });
    admin = await a.services.auth.authenticate(KEY);
  }, 300_000);

  afterAll(async () => {
    await a?.close();
    await b?.close();
    await live?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serializes appends of one run across replicas; every batch lands whole and in one piece', async () => {
    const { run } = await a.services.runs.create(admin, {
      kind: 'command',
      subject: { path: 'x', image: 'alpine:3.20', command: ['true'] },
    });
    const BATCHES = 12;
    const PER = 5;
    const key = (i: number) => i.toString(16).padStart(32, '0');
    const drafts = (i: number) =>
      Array.from({ length: PER }, (_, j) => ({
        type: 'log' as const,
        ts: '2026-12-01T10:00:00.000Z',
        level: 'info' as const,
        message: `batch ${i} line ${j}`,
      }));
    await Promise.all(
      Array.from({ length: BATCHES }, (_, i) =>
        (i % 2 ? b : a).trajectories!.appendDrafts('default', run.id, drafts(i), key(i)),
      ),
    );
    const page = await a.trajectories!.read('default', run.id, { offset: 0, limit: 1000 });
    expect(page.eventCount).toBe(BATCHES * PER);
    expect(page.items.map((e) => e.seq)).toEqual(Array.from({ length: BATCHES * PER }, (_, i) => i));
    // Each batch is contiguous: its five lines follow one another.
    const messages = page.items.map((e) => (e as { message: string }).message);
    for (let k = 0; k < BATCHES; k++) {
      const batch = messages.slice(k * PER, (k + 1) * PER).map((m) => m.split(' line ')[0]);
      expect(new Set(batch).size).toBe(1);
    }
    await a.services.runs.cancel(admin, run.id);
    await b.trajectoryJobs!.sealDue();
    const sealed = await a.services.runs.get(admin, run.id);
    expect(sealed.trajectory?.eventCount).toBe(BATCHES * PER);
    expect((await a.trajectories!.store.verify('default', run.id, sealed.trajectory!.digest)).ok).toBe(true);
  });
});
