// The artifact sweep and an upload of the same bytes, in flight at once on two connections: the sweep decides and
// deletes an address under its advisory lock, and an upload lists the bytes under the same lock and then places
// them (trajectory/artifact-sweep.ts, runners/intervals.ts). Whichever goes first, the run that uploads ends up with
// its bytes stored and served. A third connection holds what one side needs next, so each pause is a lock wait
// (watched in pg_stat_activity), never a sleep. Live PostgreSQL only (PGlite has one connection).
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  COMMAND_CAPS,
  completeTestLease,
  downloadTestArtifact,
  leaseCommandRun,
  pairTestRunner,
  type TestLease,
  type TestRunner,
  uploadTestArtifact,
} from '../src/http/testing/runners.js';
import { announceSkippedLiveSuite, LIVE_PG } from './db.js';
import { type LockRace, lockRace } from './lock-waits.js';
import type { RunnerApp } from './runner-app.js';

announceSkippedLiveSuite('test/artifact-sweep-race.pg.test.ts');

describe.runIf(LIVE_PG)('the artifact sweep racing an upload of the same bytes', () => {
  let t: RunnerApp;
  let race: LockRace;
  let locker: pg.Client;
  let runner: TestRunner;
  let runs = 0;

  beforeAll(async () => {
    race = await lockRace();
    ({ t, locker } = race);
    runner = await pairTestRunner(t.app, { name: 'sweep-race', capabilities: COMMAND_CAPS });
  }, 120_000);

  afterAll(() => race?.close());

  /** A command run of its own (equal runs would sign equal attestation bodies), leased by the runner. */
  const leased = () => leaseCommandRun(t.app, runner, ['true', String(++runs)]);

  const upload = (l: TestLease, path: string, body: string) =>
    uploadTestArtifact(t.app, runner, l, path, body);
  const complete = (l: TestLease, artifacts: unknown[]) => completeTestLease(t.app, runner, l, artifacts);
  const download = async (runId: string, path: string) => {
    const res = await downloadTestArtifact(t.app, runId, path);
    return { status: res.status, text: await res.text() };
  };

  const objectKey = (address: string) => ({
    tenant: 'default',
    path: `artifacts/blake3/${address.slice(7, 9)}/${address.slice(7)}`,
  });

  /** Bytes a settled run uploaded and did not claim: what the sweep deletes. */
  async function unneeded(bytes: string): Promise<string> {
    const l = await leased();
    const a = await upload(l, 'scratch.txt', bytes);
    expect((await complete(l, [])).status).toBe(200);
    return a.digest;
  }

  it('the sweep first: the upload waits on the address, finds the bytes gone, and places its own', async () => {
    const address = await unneeded('swept, then uploaded again');
    const backend = t.core.trajectories!.store.backend;
    const l = await leased();
    // The locker stands for the sweep inside its critical section: the address's lock held, the bytes deleted.
    await locker.query('BEGIN');
    await locker.query(`SELECT pg_advisory_xact_lock(${0x61727466}, hashtext($1))`, [
      JSON.stringify(['default', address]),
    ]);
    await backend.delete(objectKey(address));
    let answered = false;
    const pending = upload(l, 'again.txt', 'swept, then uploaded again').finally(() => {
      answered = true;
    });
    await race.waiting(1, () => answered);
    expect(answered).toBe(false);
    await locker.query('COMMIT');
    const claim = await pending;
    expect(claim.digest).toBe(address);
    expect(await backend.stat(objectKey(address))).not.toBeNull();
    expect((await complete(l, [claim])).status).toBe(200);
    expect(await download(l.runId, 'again.txt')).toEqual({ status: 200, text: 'swept, then uploaded again' });
  });

  it('the upload first: the sweep waits on the address, sees the new listing, and keeps the bytes', async () => {
    const address = await unneeded('uploaded while the sweep looks');
    const backend = t.core.trajectories!.store.backend;
    const l = await leased();
    // The locker holds the table the upload lists in: the upload has the address's lock and waits to insert
    // its row (its bytes staged, placed once the listing commits); the sweep then waits on the address.
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE runner_artifacts IN SHARE MODE');
    let uploaded = false;
    const pending = upload(l, 'kept.txt', 'uploaded while the sweep looks').finally(() => {
      uploaded = true;
    });
    await race.waiting(1, () => uploaded);
    let swept = false;
    const sweep = t.core.trajectoryJobs!.sweepArtifacts().finally(() => {
      swept = true;
    });
    await race.waiting(2, () => swept);
    expect({ uploaded, swept }).toEqual({ uploaded: false, swept: false });
    await locker.query('COMMIT');
    const claim = await pending;
    const passes = await sweep;
    expect(passes.find((p) => p.tenant === 'default')?.deleted).not.toContain(address);
    expect(await backend.stat(objectKey(address))).not.toBeNull();
    expect((await complete(l, [claim])).status).toBe(200);
    expect(await download(l.runId, 'kept.txt')).toEqual({
      status: 200,
      text: 'uploaded while the sweep looks',
    });
  });
});
