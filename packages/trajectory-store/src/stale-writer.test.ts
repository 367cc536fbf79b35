// What a writer whose picture of a trajectory is out of date cannot do: append to a trajectory another
// process sealed or retention deleted (an acknowledged append the seal never took would be lost), or, after a
// write whose answer was lost, store a chunk beside the one that landed (two chunks at one offset: the
// trajectory would no longer load after a restart).
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ObjectBackend } from './backend.js';
import { expectCode } from './contract.js';
import { storageError } from './errors.js';
import { sampleEvents } from './fixtures.js';
import type { ObjectKey } from './keys.js';
import { LocalBackend, localBackend } from './local/local-backend.js';
import { applyRetention } from './retention.js';
import { TrajectoryStore } from './trajectory-store.js';

const T = 'acme';

/** A local backend whose next `put` stores the object and then fails, as a lost answer looks to the caller. */
class LostAnswerBackend extends LocalBackend implements ObjectBackend {
  loseNextPut = false;
  override async put(key: ObjectKey, body: Uint8Array): Promise<void> {
    await super.put(key, body);
    if (!this.loseNextPut) return;
    this.loseNextPut = false;
    throw storageError(new Error('socket hang up'), `write ${key.path}`);
  }
}

describe('a writer with a stale picture of the trajectory', () => {
  it('is refused (trajectory_sealed) once another process sealed it; nothing acknowledged is lost', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'stale-writer-'));
    const writer = new TrajectoryStore({ backend: localBackend({ root }) });
    const sealer = new TrajectoryStore({ backend: localBackend({ root }) });
    const events = sampleEvents('run-1', 1, 6);
    await writer.append(T, 'run-1', events.slice(0, 3)); // the writer now caches the trajectory as live
    const { ref } = await sealer.seal(T, 'run-1');
    expect(ref.eventCount).toBe(3);

    await expectCode(writer.append(T, 'run-1', events.slice(3)), 'trajectory_sealed');
    const fresh = new TrajectoryStore({ backend: localBackend({ root }) });
    const page = await fresh.read(T, 'run-1', { offset: 0, limit: 100 });
    expect(page).toMatchObject({ eventCount: 3, sealed: true });
    expect((await fresh.verify(T, 'run-1', ref.digest)).ok).toBe(true);
    for (const s of [writer, sealer, fresh]) await s.close();
  });

  it('is refused once retention deleted the trajectory it still caches as live', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'stale-writer-'));
    const writer = new TrajectoryStore({ backend: localBackend({ root }) });
    const other = new TrajectoryStore({
      backend: localBackend({ root }),
      now: () => new Date('2026-01-01T00:00:00.000Z'),
    });
    await writer.append(T, 'run-2', sampleEvents('run-2', 1, 2));
    await other.seal(T, 'run-2');
    const deleted = await applyRetention(other, T, {
      trajectoryRetentionDays: 1,
      now: new Date('2026-02-01T00:00:00.000Z'),
      isEvidence: () => false,
    });
    expect(deleted.map((d) => d.trajectoryId)).toEqual(['run-2']);
    await expectCode(writer.append(T, 'run-2', sampleEvents('run-2', 3, 1)), 'trajectory_sealed');
    const objects: string[] = [];
    for await (const o of writer.backend.list(T, 'trajectories/')) objects.push(o.path);
    expect(objects.filter((p) => p.includes('/chunks/'))).toEqual([]);
    for (const s of [writer, other]) await s.close();
  });

  it('after a write whose answer was lost, numbers after the chunk that landed (a restart still loads)', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'stale-writer-'));
    const backend = new LostAnswerBackend({ root });
    const writer = new TrajectoryStore({ backend });
    const events = sampleEvents('run-3', 1, 10);
    await writer.append(T, 'run-3', events.slice(0, 2));
    backend.loseNextPut = true;
    await expectCode(writer.append(T, 'run-3', events.slice(2, 5)), 'storage_unavailable');
    // The caller retries with what it has by now: the events that landed are duplicates, the rest follow.
    const retry = await writer.append(T, 'run-3', events.slice(2));
    expect(retry).toMatchObject({ appended: 5, duplicates: 3, eventCount: 10, lastSeq: 10 });

    const restarted = new TrajectoryStore({ backend: localBackend({ root }) });
    const page = await restarted.read(T, 'run-3', { offset: 0, limit: 100 });
    expect(page.items.map((e) => e.seq)).toEqual(events.map((e) => e.seq));
    const { ref } = await restarted.seal(T, 'run-3');
    expect(ref.eventCount).toBe(10);
    for (const s of [writer, restarted]) await s.close();
  });
});
