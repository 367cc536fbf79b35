// `limits.cpuTimeMs` is the sandbox's total CPU time across every command: reaching it is `timeout` with
// bound `cpu` even for commands shorter than the watcher's poll. The poll is set far out here, so only the
// checks at each command's start and end can stop them. Before, every command that ended between two polls
// answered as if there were no limit (six 40 ms commands under a 100 ms limit all succeeded).
import { PlacementError } from '@everdict/placement';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeDriver, requireBwrap } from './helpers.js';

const driver = makeDriver({ cpuPollMs: 600_000 });
const busy = ['sh', '-c', 'i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done'];

beforeAll(() => {
  requireBwrap();
});

describe('the CPU-time limit across short commands', () => {
  it('the command that reaches it ends as timeout (cpu), and no later command starts', async () => {
    const h = await driver.provision({
      labels: { tenant: 'cpu', runId: 'short-commands', kind: 'sandbox' },
      limits: { cpuTimeMs: 100 },
    });
    let stopped: unknown;
    for (let i = 0; i < 40 && stopped === undefined; i++) {
      await driver.exec(h, busy).catch((e: unknown) => {
        stopped = e;
      });
    }
    expect(stopped).toBeInstanceOf(PlacementError);
    // limitMs is the CPU-time limit that ran out (it was the sandbox's wall budget, an hour).
    expect(stopped).toMatchObject({ code: 'timeout', detail: { bound: 'cpu', limitMs: 100 } });
    expect((stopped as PlacementError).detail.result).toMatchObject({ exitCode: 0 });
    const used = (await driver.usage(h)).cpuTimeMs!;
    expect(used).toBeGreaterThanOrEqual(100);

    // Used up: refused before it starts (no result, no CPU spent), for exec and stream alike.
    const refused = await driver.exec(h, busy).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'timeout', detail: { bound: 'cpu', limitMs: 100 } });
    expect((refused as PlacementError).detail.result).toBeUndefined();
    await expect(driver.stream(h, ['true'])).rejects.toMatchObject({ code: 'timeout' });
    expect((await driver.usage(h)).cpuTimeMs).toBe(used);
    await driver.dispose(h);
  }, 60_000);

  it('a command the watcher stops at the limit reports that limit as limitMs', async () => {
    const polled = makeDriver({ cpuPollMs: 20 });
    const h = await polled.provision({
      labels: { tenant: 'cpu', runId: 'watched', kind: 'sandbox' },
      limits: { cpuTimeMs: 200 },
    });
    const e = await polled
      .exec(h, ['sh', '-c', 'while :; do :; done'], { timeoutMs: 30_000 })
      .catch((x) => x);
    expect(e).toMatchObject({ code: 'timeout', detail: { bound: 'cpu', limitMs: 200 } });
    await polled.dispose(h);
  }, 60_000);
});
