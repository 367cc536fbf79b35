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
    // 100 MB of 'a' folded into lines of 4095: every byte arrives in a log message (each message's bytes and
    // the line break after it; the last line has none), whole lines as many as fit in 16 KiB an event.
    const lines = Math.ceil(100_000_000 / 4095);
    expect(r.bytes).toBe(100_000_000 + lines - 1);
    expect(r.sentBytes).toBe(r.bytes + 1);
    expect(r.events).toBeGreaterThanOrEqual(Math.ceil(r.bytes / (16 * 1024)));
    expect(r.events).toBeLessThan(lines / 3); // not one event per line
    expect(r.tail).toBe(64 * 1024);
    expect(r.batches).toBeGreaterThan(100);
    expect(r.maxRssKb).toBeLessThan(200 * 1024);
  });
});
