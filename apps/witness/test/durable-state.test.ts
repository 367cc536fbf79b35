// A witness cosigns only what it made durable: the state file's directory fsync is part of the save. When
// it fails (EIO from the volume), the rename may not survive a crash, so the poll is `StateUnwritable`, the
// memory stays on the old tree and nothing is cosigned — the next poll that can save accepts and cosigns.
// (The failure is injected through `WitnessOptions.disk`: a directory fsync cannot be made to fail for real
// here, where tests run as root on a local filesystem.)
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import {
  loadState,
  nodeStateDisk,
  type StateDisk,
  Witness,
  WitnessError,
  WitnessMetrics,
} from '../src/index.js';
import { type Fixture, fixture, head } from './helpers.js';

let f: Fixture | undefined;
afterEach(async () => {
  await f?.server.close();
  f = undefined;
});

/** The real directory fsync, or EIO while `failing`; counts the failed calls. */
function flakyDisk(): StateDisk & { failing: boolean; failed: number } {
  return {
    failing: false,
    failed: 0,
    fsyncDirectory(dir) {
      if (this.failing) {
        this.failed++;
        throw Object.assign(new Error(`EIO: i/o error, fsync '${dir}'`), { code: 'EIO' });
      }
      nodeStateDisk.fsyncDirectory(dir);
    },
  };
}

describe('the state directory fsync', () => {
  it('fails: StateUnwritable, the memory unchanged, nothing cosigned; accepted once it succeeds', async () => {
    f = await fixture(3);
    const statePath = join(f.dir, 'state.json');
    const disk = flakyDisk();
    const w = new Witness({
      key: f.witness,
      statePath,
      state: loadState(statePath),
      metrics: new WitnessMetrics(),
      logger: pino({ level: 'silent' }),
      disk,
    });
    const target = { url: f.server.url };
    expect(await w.poll(target)).toEqual({ kind: 'accepted', treeSize: 3, cosignatures: 1 });

    for (let i = 4; i <= 5; i++) f.log.append({ tenantId: 'acme', runId: 'run-1', length: i, head: head(i) });
    f.log.publish();
    disk.failing = true;
    const e = await w.poll(target).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(WitnessError);
    expect((e as WitnessError).code).toBe('StateUnwritable');
    expect(disk.failed).toBe(1);
    expect(w.state.logs[f.server.url]?.accepted?.tree_size).toBe('3');
    expect(f.log.cosignaturesOf(5)).toEqual([]); // a crash now could lose the tree: not vouched for

    disk.failing = false;
    expect(await w.poll(target)).toEqual({ kind: 'accepted', treeSize: 5, cosignatures: 1 });
    expect(loadState(statePath).logs[f.server.url]?.accepted?.tree_size).toBe('5');
  });
});
