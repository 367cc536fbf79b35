// A snapshot is read into the driver's memory: its size must be bounded, or one sandbox's sparse file
// (`truncate -s 1T`, no disk used) has the driver read a terabyte of zeros into a buffer and die with every
// other sandbox it holds. Past `snapshotCapBytes` the archiver is stopped and the snapshot refused with
// `output_capped`.
import { isPlacementError } from '@everdict/placement';
import { describe, expect, it } from 'vitest';
import { makeDriver, requireBwrap } from './helpers.js';

const labels = { tenant: 'review', runId: 'sparse', kind: 'sandbox' };

describe('snapshot size', () => {
  it('refuses a workspace past snapshotCapBytes with output_capped', async () => {
    requireBwrap();
    const driver = makeDriver({ snapshotCapBytes: 1024 * 1024 });
    const box = await driver.provision({ labels });
    expect((await driver.exec(box, ['sh', '-c', 'truncate -s 48M sparse && echo hi > small'])).exitCode).toBe(
      0,
    );
    const refused = await driver.snapshot(box).then(
      () => null,
      (e: unknown) => e,
    );
    expect(isPlacementError(refused, 'output_capped')).toBe(true);
    expect((refused as { detail: Record<string, unknown> }).detail).toMatchObject({ capBytes: 1024 * 1024 });
    // within the cap it is answered as before
    expect((await driver.exec(box, ['rm', 'sparse'])).exitCode).toBe(0);
    const snapshot = await driver.snapshot(box);
    expect(snapshot.bytes.byteLength).toBeLessThan(1024 * 1024);
    await driver.dispose(box);
  });
});
