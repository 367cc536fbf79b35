// Cascade cancellation in bounded transactions, durable across a crash: a 1,200-run tree on a PGlite data
// directory; the first core stops after its first batch (injected through `cascade.afterBatch`), a new core
// on the same directory completes the cascade. Opted-out kinds and causes (tenant policy) stay untouched.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BOOTSTRAP_KEY, OFFLINE_RUNNER } from '../../test/core.js';
import { type Core, startCore } from '../core.js';
import { MAX_CASCADE_BATCH } from './cascade.js';
import type { CoreOptions } from './index.js';
import { servicePrincipal } from './types.js';

const dir = mkdtempSync(join(tmpdir(), 'everdict-cascade-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const cmd = { kind: 'command', subject: { path: 'a', image: 'i', command: ['x'] } };
const evalRun = { kind: 'eval', subject: { harness: { id: 'h', version: '1' }, caseId: 'c1' } };

const start = (cascade: CoreOptions['cascade']): Promise<Core> =>
  startCore({
    dataDir: dir,
    bootstrapKey: BOOTSTRAP_KEY,
    executors: [OFFLINE_RUNNER],
    scheduler: { enabled: false },
    policy: {
      maxQueued: 5_000,
      maxChildrenPerRun: 1_000,
      cascade: { skipKinds: ['eval'], skipCauses: ['event'] },
    },
    cascade,
  });

describe('cascade: bounded transactions, resumed after a crash', () => {
  it('cancels a 1,200-run tree in ≥ 3 transactions of ≤ 500, each descendant once, opt-outs untouched', async () => {
    const batches: number[] = [];
    const first = await start({
      afterBatch: ({ batch, cancelled }) => {
        batches.push(cancelled.length);
        if (batch === 1) throw new Error('injected crash after the first batch');
      },
    });
    const admin = await first.services.auth.authenticate(BOOTSTRAP_KEY);
    const runs = first.services.runs;
    const root = (await runs.create(admin, cmd)).run.id;
    // 6 × 200 command descendants (under 6 mids) — all to be cancelled.
    const mids = await Promise.all(
      Array.from({ length: 6 }, () => runs.create(admin, cmd, { causedByRunId: root })),
    );
    const made = await Promise.all(
      mids.flatMap((mid) =>
        Array.from({ length: 199 }, () => runs.create(admin, cmd, { causedByRunId: mid.run.id })),
      ),
    );
    const leaves = made.map((m) => m.run.id);
    const targets = new Set([...mids.map((m) => m.run.id), ...leaves]);
    expect(targets.size).toBe(1_200);
    // Opted out: an eval child (kind) and an event-caused child (cause), each with a child of its own.
    const skippedKind = (await runs.create(admin, evalRun, { causedByRunId: root })).run.id;
    const underKind = (await runs.create(admin, cmd, { causedByRunId: skippedKind })).run.id;
    const svc = servicePrincipal(admin.tenantId);
    const skippedCause = (
      await runs.create(svc, cmd, {
        causedByRunId: root,
        cause: 'event',
        eventId: 'evt_1',
        eventKind: 'run.settled',
      })
    ).run.id;
    expect((await runs.get(admin, skippedCause)).origin.cause).toBe('event');
    const underCause = (await runs.create(admin, cmd, { causedByRunId: skippedCause })).run.id;

    await expect(runs.cancel(admin, root)).rejects.toThrow('injected crash');
    const db1 = first.internals.deps.db;
    const job = await db1.selectFrom('cascade_jobs').selectAll().executeTakeFirstOrThrow();
    expect(job).toMatchObject({ root_run_id: root, batches: 1, cancelled: MAX_CASCADE_BATCH, done_at: null });
    await first.close();

    // A new core on the same directory resumes the open job at start.
    const second = await start({ afterBatch: ({ cancelled }) => void batches.push(cancelled.length) });
    try {
      await second.internals.cascadesResumed;
      const db = second.internals.deps.db;
      const done = await db.selectFrom('cascade_jobs').selectAll().executeTakeFirstOrThrow();
      expect(done.done_at).not.toBeNull();
      expect(done.batches).toBe(3);
      expect(done.cancelled).toBe(1_200);
      expect(batches).toEqual([500, 500, 200]);
      expect(batches.every((n) => n <= MAX_CASCADE_BATCH)).toBe(true);

      const rows = await db.selectFrom('runs').select(['id', 'status']).execute();
      const status = new Map(rows.map((r) => [r.id, r.status]));
      expect(status.get(root)).toBe('cancelled');
      for (const id of targets) expect(status.get(id)).toBe('cancelled');
      for (const id of [skippedKind, underKind, skippedCause, underCause])
        expect(status.get(id)).toBe('queued');
      // Exactly once: one settle event per cancelled run, and one admission settlement.
      const settles = await db
        .selectFrom('events')
        .select(['run_id'])
        .where('kind', '=', 'run.settled')
        .execute();
      const perRun = new Map<string, number>();
      for (const e of settles) perRun.set(e.run_id!, (perRun.get(e.run_id!) ?? 0) + 1);
      expect(perRun.size).toBe(1_201);
      expect([...perRun.values()].every((n) => n === 1)).toBe(true);
    } finally {
      await second.close();
    }
  }, 600_000);
});
