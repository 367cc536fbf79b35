// A result the status machine (or the usage check) refuses for a run still running is never lost silently:
// settleOutcome reports it in `refused` with the app's code and reason, the package's logger warns with the
// run id and that code, the SettleBatcher answers the item `refused` (not settled), and the run is left
// running as it was — the same result settles once it can apply.
import { MAX_USAGE_USD } from '@everdict/run-model';
import { afterEach, describe, expect, it } from 'vitest';
import { type TestCore, testCore } from '../../test/core.js';
import type { Deps } from '../services/context.js';
import { type Finished, settleOutcome } from './batch-transitions.js';
import { claimAndStart } from './claim-start.js';
import { INLINE_KINDS } from './dispatch-loop.js';
import { SettleBatcher } from './settle-batcher.js';

const done = (runId: string, usage: Record<string, number> = { costUsd: 0.5 }): Finished => ({
  tenant: 'default',
  runId,
  event: { type: 'succeed' },
  extras: { outputs: { summary: 'ok', exitCode: 0 }, usage },
});

type Logged = [level: string, msg: string, fields: Record<string, unknown> | undefined];

describe('a refused settle', () => {
  let t: TestCore;
  afterEach(async () => t.close());

  async function running(n: number): Promise<string[]> {
    t = await testCore({ scheduler: { enabled: false } });
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const { run } = await t.core.services.runs.create(t.admin, {
        kind: 'analysis',
        subject: { config: { fn: 'echo', message: `m${i}` } },
      });
      ids.push(run.id);
    }
    expect(await claimAndStart(t.core.internals.deps.db, n, new Date(), INLINE_KINDS)).toHaveLength(n);
    return ids;
  }

  /** The core's deps with a captured log, and optionally a clock `behindMs` behind the one that started the runs. */
  function deps(behindMs = 0): { deps: Deps; logged: Logged[] } {
    const base = t.core.internals.deps;
    const logged: Logged[] = [];
    return {
      deps: {
        ...base,
        log: (level, msg, fields) => logged.push([level, msg, fields]),
        ...(behindMs > 0 ? { clock: () => new Date(Date.now() - behindMs) } : {}),
      },
      logged,
    };
  }

  const statusOf = async (id: string) => (await t.core.services.runs.get(t.admin, id)).status;
  const warnings = (logged: Logged[]) => logged.filter(([level]) => level === 'warn').map(([, , f]) => f);

  it("is reported with its code and logged, not settled, when this replica's clock is behind the run's", async () => {
    const [x] = await running(1);
    const skewed = deps(60_000);
    const out = await settleOutcome(skewed.deps.db, skewed.deps, [done(x!)]);
    expect(out.settled).toEqual([]);
    expect(out.refused).toEqual([
      expect.objectContaining({ tenant: 'default', runId: x, code: 'conflict', reason: 'clock_behind' }),
    ]);
    expect(warnings(skewed.logged)).toEqual([
      expect.objectContaining({ runId: x, code: 'conflict', reason: 'clock_behind' }),
    ]);
    // Nothing was written: still running, and the same result settles once the clock is right.
    expect(await statusOf(x!)).toBe('running');
    const right = deps();
    expect(await settleOutcome(right.deps.db, right.deps, [done(x!)])).toEqual({ settled: [x], refused: [] });
    expect(await statusOf(x!)).toBe('succeeded');
    expect(warnings(right.logged)).toEqual([]);
  });

  it('refuses a usage past its bounds (out_of_range) while the rest of the batch settles', async () => {
    const [x, y] = await running(2);
    const { deps: d, logged } = deps();
    const out = await settleOutcome(d.db, d, [done(x!, { costUsd: MAX_USAGE_USD * 10 }), done(y!)]);
    expect(out.settled).toEqual([y]);
    expect(out.refused).toEqual([expect.objectContaining({ runId: x, code: 'out_of_range' })]);
    expect(warnings(logged)).toEqual([expect.objectContaining({ runId: x, code: 'out_of_range' })]);
    expect(await statusOf(x!)).toBe('running');
    expect(await statusOf(y!)).toBe('succeeded');
    const spent = await d.db.selectFrom('adm_envelopes_now').select('spent_usd').executeTakeFirstOrThrow();
    expect(spent.spent_usd).toBe(0.5);
  });

  it('the batcher answers each item: settled, dropped (no longer running) or refused with the code', async () => {
    const [x, y, z] = await running(3);
    await t.core.services.runs.cancel(t.admin, y!);
    const { deps: d } = deps();
    const batcher = new SettleBatcher(d);
    const answers = await Promise.all([
      batcher.settle(done(x!)),
      batcher.settle(done(y!)),
      batcher.settle(done(z!, { costUsd: Number.POSITIVE_INFINITY })),
    ]);
    expect(answers).toEqual([
      { outcome: 'settled' },
      { outcome: 'dropped' },
      expect.objectContaining({ outcome: 'refused', runId: z, code: 'out_of_range' }),
    ]);
    await batcher.idle();
    expect(await statusOf(z!)).toBe('running');
  });
});
