// A command printing 100 MB through a slow sink keeps the runner under 200 MB RSS: the pumps wait for the
// journal, the journal for the batch in flight, so the sandbox's pipe (not the runner's heap) holds the rest.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

describe('back-pressure', () => {
  it('streams 100 MB of output with the runner under 200 MB RSS, every byte in the journal', () => {
    const script = fileURLToPath(new URL('./fixtures/print-100mb.mjs', import.meta.url));
    const run = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 560_000 });
    expect(run.status, run.stderr).toBe(0);
    const r = JSON.parse(run.stdout.trim().split('\n').pop()!) as {
      bytes: number;
      sentBytes: number;
      batches: number;
      events: number;
      exitCode: number;
      tail: number;
      maxRssKb: number;
    };
    expect(r.exitCode).toBe(0);
    // 100 MB of 'a' folded into lines: every character arrives as a log message, in lines of ≤ 4095.
    expect(r.events).toBe(Math.ceil(100_000_000 / 4095));
    expect(r.sentBytes - r.events).toBe(100_000_000);
    expect(r.bytes).toBe(100_000_000 + r.events - 1);
    expect(r.tail).toBe(64 * 1024);
    expect(r.batches).toBeGreaterThan(100);
    expect(r.maxRssKb).toBeLessThan(200 * 1024);
  });
});
