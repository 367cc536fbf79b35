// The built `everdict-placement-process reap` writing to a pipe whose reader is slow: every reaped sandbox is
// listed. On a pipe Node's stdout is asynchronous, and a CLI that exits right after writing drops what the
// reader has not taken yet (past the pipe's 64 KiB) — a crash's leftovers, removed but not all reported.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { layout, listRecords, writeRecord } from '../src/sandbox-state.js';
import { makeDriver, requireBwrap } from './helpers.js';

const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const LEFTOVERS = 600;

describe('the built CLI writing to a slow pipe', () => {
  it('lists every sandbox reap removed', async () => {
    requireBwrap();
    expect(existsSync(cli), `${cli} is missing: build first (turbo's test task does)`).toBe(true);
    const driver = makeDriver();
    const live = await driver.provision({ labels: { tenant: 'pipe', runId: 'template', kind: 'command' } });
    const l = layout(driver.config.stateDir);
    const [template] = await listRecords(l);
    await driver.dispose(live);
    // A crash's leftovers: label files whose owner is gone (pid 1 never started at this time), each with a
    // workspace of its own and no cgroup (an rlimit host's).
    for (let i = 0; i < LEFTOVERS; i += 1) {
      const id = `pd-${i.toString(16).padStart(24, '0')}`;
      const workspace = join(l.workspaces, `ws-leftover-${i}`);
      mkdirSync(workspace);
      writeRecord(l, {
        ...template!,
        handle: { ...template!.handle, id, labels: { tenant: 'pipe', runId: `left-${i}`, kind: 'command' } },
        workspace,
        log: join(l.logs, `${id}.log`),
        limits: { mechanism: 'rlimit', paths: [] },
        owner: { pid: 1, startTime: 'not-this-boot' },
      });
    }
    // The reader takes nothing for two seconds: the CLI has written everything by then (600 removals take ≈ 0.5 s)
    // and, had it not waited for its output to leave, would have exited with the rest unsent.
    const out = execFileSync(
      'sh',
      ['-c', `node "$0" reap --state-dir "$1" --tenant pipe | (sleep 2; cat)`, cli, driver.config.stateDir],
      { encoding: 'utf8', maxBuffer: 64 << 20 },
    );
    const lines = out.trimEnd().split('\n');
    expect(out.length).toBeGreaterThan(72 * 1024); // well past a pipe's 64 KiB
    expect(lines).toHaveLength(LEFTOVERS);
    expect(new Set(lines.map((line) => (JSON.parse(line) as { id: string }).id)).size).toBe(LEFTOVERS);
    expect(await listRecords(l)).toEqual([]);
  }, 120_000);
});
