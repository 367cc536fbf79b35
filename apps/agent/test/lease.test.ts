// Leases of turns follow the runner protocol's rules: a grant bumps the epoch, heartbeats keep it, an
// expired lease requeues under a new epoch, and a stale epoch is `stale_lease` that changes nothing.
import { describe, expect, it } from 'vitest';
import { isAgentError } from '../src/errors.js';
import { runInterval } from '../src/loop/interval.js';
import { workOnce } from '../src/loop/worker.js';
import { ScriptedProvider } from '../src/model/scripted-provider.js';
import { localSetup } from './fixtures.js';

describe('turn leases', () => {
  it('an expired lease requeues under a new epoch; the old holder is lost and its report is stale', async () => {
    let clock = 1_000_000;
    const { cp, store } = await localSetup({}, { now: () => clock, leaseMs: 10_000 });
    const { runId } = await cp.startTurn({ tenant: 'acme', agentId: 'releaser', text: 'Hi.' });
    const [a] = await cp.lease({ free: 1, holder: 'a' });
    expect(a!.epoch).toBe(1);
    clock += 5_000;
    expect(await cp.heartbeat('a', [{ runId, epoch: 1 }])).toEqual({ lost: [] });
    clock += 9_000; // the heartbeat extended it: still a's
    expect(await cp.lease({ free: 1, holder: 'b' })).toEqual([]);
    clock += 10_001; // no heartbeat for a whole lease: it requeues
    const [b] = await cp.lease({ free: 1, holder: 'b' });
    expect(b!.epoch).toBe(2);
    expect(await cp.heartbeat('a', [{ runId, epoch: 1 }])).toEqual({ lost: [runId] });

    // a's interval finishes late: its report is refused and the turn stays b's, record untouched.
    const provider = new ScriptedProvider([{ content: 'hello' }]);
    const err = await runInterval(a!, {
      controlPlane: cp,
      store,
      provider: () => provider,
      now: () => clock,
    }).catch((e: unknown) => e);
    expect(isAgentError(err) && [err.code, err.httpStatus]).toEqual(['stale_lease', 409]);
    expect(cp.turn(runId)).toMatchObject({ status: 'running', holder: 'b', epoch: 2, record: null });
    expect((await store.head('acme', runId)).status).toBe('live');
  });

  it('cancelling a turn mid-interval reaches the agent within a heartbeat: it stops, reports nothing', async () => {
    const { cp, store } = await localSetup({}, { heartbeatMs: 20 });
    const { runId } = await cp.startTurn({ tenant: 'acme', agentId: 'releaser', text: 'Release.' });
    const provider = new ScriptedProvider([
      { toolCalls: [{ tool: 'ask_approval', args: { question: 'ok?' } }] },
    ]);
    const working = workOnce({
      controlPlane: cp,
      store,
      provider: () => provider,
      holder: 'h',
      mode: 'blocking',
    });
    for (let i = 0; i < 2000 && !cp.turn(runId)?.outstanding.length; i++)
      await new Promise((r) => setTimeout(r, 10));
    await cp.cancelTurn(runId);
    expect(await working).toEqual([{ result: 'lost', runId }]);
    expect(cp.turn(runId)).toMatchObject({ status: 'cancelled', record: null });
  });
});
