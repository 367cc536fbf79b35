// A restore that a dispose overtakes: dispose removes the workspace while the restore is writing its fresh
// copy. The restore must not put a workspace back after the sandbox is gone (nothing would ever remove it:
// its label file is gone too), and it answers a PlacementError (`gone`), not a raw filesystem error.
import { readdirSync } from 'node:fs';
import { isPlacementError } from '@everdict/placement';
import { describe, expect, it } from 'vitest';
import { layout } from '../src/sandbox-state.js';
import { makeDriver, requireBwrap } from './helpers.js';

const labels = (runId: string) => ({ tenant: 'review', runId, kind: 'sandbox' });

describe('restore overtaken by dispose', () => {
  it('leaves nothing behind and refuses with gone', async () => {
    requireBwrap();
    const driver = makeDriver({ readyPool: 0 });
    const source = await driver.provision({ labels: labels('source') });
    const files = 'mkdir -p a/b && for i in $(seq 1 200); do echo $i > a/b/f$i; done';
    expect((await driver.exec(source, ['sh', '-c', files])).exitCode).toBe(0);
    const snapshot = await driver.snapshot(source);
    await driver.dispose(source);
    const workspaces = layout(driver.config.stateDir).workspaces;
    for (let round = 0; round < 20; round++) {
      const box = await driver.provision({ labels: labels(`target-${round}`) });
      const restoring = driver.restore(box, snapshot).then(
        () => null,
        (e: unknown) => e,
      );
      // the dispose begins while the restore is under way (after its first turn)
      await new Promise((resolve) => setImmediate(resolve));
      await driver.dispose(box);
      const outcome = await restoring;
      if (outcome !== null) expect(isPlacementError(outcome, 'gone')).toBe(true);
      expect(readdirSync(workspaces)).toEqual([]);
    }
  });
});
