// `startControlPlane` whose start runs out of time leaves nothing running: its caller got no handle to stop with.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startControlPlane } from '../src/testing.js';

/** This process's live children whose command line names the control plane's dist (`…/main.js`). */
function controlPlaneChildren(): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (ppid === process.pid && cmdline.includes('control-plane/dist/main.js')) found.push(Number(entry));
    } catch {
      // gone while listed
    }
  }
  return found;
}

describe('startControlPlane past its start timeout', () => {
  it('rejects only once the control plane it spawned is gone', async () => {
    const err = await startControlPlane({ freshLedger: true, startTimeoutMs: 1 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(String(err)).toMatch(/did not start in time \(killed\)/);
    expect(controlPlaneChildren()).toEqual([]);
  }, 60_000);
});
