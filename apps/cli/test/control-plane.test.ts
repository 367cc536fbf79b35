// A start abandoned by its hook (timed out) leaves no control plane behind once the file's afterAll ran.
import { afterAll, describe, expect, it } from 'vitest';
import { CONTROL_PLANE_MAIN, fileControlPlane } from './control-plane.js';
import { processesRunning } from './procs.js';

const left: number[] = [];
afterAll(() => {
  for (const pid of left)
    try {
      process.kill(pid, 'SIGKILL'); // only if the test failed
    } catch {
      /* gone */
    }
});

describe('a test file control plane', () => {
  it('stop() while its start is still under way: the spawned control plane is gone, the start rejects', async () => {
    const before = new Set(processesRunning(CONTROL_PLANE_MAIN, process.pid));
    const spawned = () => processesRunning(CONTROL_PLANE_MAIN, process.pid).filter((p) => !before.has(p));
    const file = fileControlPlane();
    // The beforeAll a timeout abandons: nobody awaits it any more.
    const start = file.start().then(
      () => 'started',
      (e: unknown) => String(e),
    );
    while (spawned().length === 0) await new Promise((r) => setTimeout(r, 20)); // its child is running
    await file.stop(); // the afterAll
    expect(await start).not.toBe('started');
    const running = spawned();
    left.push(...running);
    expect(running).toEqual([]);
  }, 240_000);
});
