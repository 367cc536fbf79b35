// The envelope through the port: an agent with a 5-run envelope asking for 50 caused runs gets 5 admitted
// by the real admission gate; the other 45 calls come back to the model as typed 402 tool errors (never a
// pretend result). Cancelling the turn cancels what it caused; a disabled agent is not activated.
import { verifyWire } from '@everdict/runrecord';
import { describe, expect, it } from 'vitest';
import { isAgentError } from '../src/errors.js';
import { workOnce } from '../src/loop/worker.js';
import { ScriptedProvider } from '../src/model/scripted-provider.js';
import { localSetup } from './fixtures.js';

const fifty = Array.from({ length: 50 }, (_, i) => ({
  tool: 'run_command',
  args: { command: ['make', `shard-${i}`] },
  callId: `run_${i}`,
}));

describe('an agent envelope of 5 runs', () => {
  it('admits 5 of 50 caused runs; 45 are 402 tool errors the model sees; the turn parks on the 5', async () => {
    const { cp, store } = await localSetup({ envelope: { runs: 5, usd: 5 } });
    const { runId } = await cp.startTurn({ tenant: 'acme', agentId: 'releaser', text: 'Build every shard.' });
    let seen: string[] = [];
    const provider = new ScriptedProvider([
      { toolCalls: fifty },
      (messages) => {
        seen = messages.filter((m) => m.role === 'tool').map((m) => m.content);
        return { content: 'done' };
      },
    ]);
    const [out] = await workOnce({ controlPlane: cp, store, provider: () => provider, holder: 'h' });
    expect(out).toMatchObject({ result: 'parked' });
    const caused = cp.causedRuns(runId);
    expect(caused).toHaveLength(5);
    expect(caused.every((r) => r.kind === 'command' && r.status === 'queued')).toBe(true);
    expect(cp.turn(runId)!.outstanding).toEqual(['run_0', 'run_1', 'run_2', 'run_3', 'run_4']);

    const events = (await store.read('acme', runId, { offset: 0, limit: 1000 })).items;
    const refusals = events.filter((e) => e.type === 'tool_result' && e.isError);
    expect(refusals).toHaveLength(45);
    for (const r of refusals) {
      expect(r.type === 'tool_result' && r.output).toMatchObject({
        error: { code: 'envelope_exhausted', status: 402 },
      });
    }

    // The caused runs settle; the turn resumes and the model reads 50 results: 5 outputs, 45 refusals.
    for (const r of caused)
      await cp.settleRun(r.runId, { status: 'succeeded', outputs: { exitCode: 0 }, usd: 0.01 });
    const [next] = await workOnce({ controlPlane: cp, store, provider: () => provider, holder: 'h2' });
    expect(next).toMatchObject({ result: 'succeeded', summary: 'done' });
    expect(seen).toHaveLength(50);
    expect(seen.filter((s) => s.includes('"status":402'))).toHaveLength(45);
    const v = verifyWire(cp.turn(runId)!.record);
    expect(v.ok && v.account.verdict).toBe('non_blocking');
  });

  it('cancelling the turn cancels its non-terminal caused runs and closes the parked record', async () => {
    const { cp, store } = await localSetup({ envelope: { runs: 5 } });
    const { runId } = await cp.startTurn({ tenant: 'acme', agentId: 'releaser', text: 'Build.' });
    const provider = new ScriptedProvider([{ toolCalls: fifty.slice(0, 3) }]);
    await workOnce({ controlPlane: cp, store, provider: () => provider, holder: 'h' });
    const caused = cp.causedRuns(runId);
    await cp.settleRun(caused[0]!.runId, { status: 'succeeded' });
    const { cancelled } = await cp.cancelTurn(runId);
    expect(new Set(cancelled)).toEqual(new Set([runId, caused[1]!.runId, caused[2]!.runId]));
    expect(cp.causedRuns(runId).map((r) => r.status)).toEqual(['succeeded', 'cancelled', 'cancelled']);
    const v = verifyWire(cp.turn(runId)!.record);
    expect(v.ok && v.phase).toBe('closed');
    // Nothing left to lease: a cancelled turn is never resumed.
    expect(await cp.lease({ free: 5, holder: 'x' })).toEqual([]);
  });

  it('a disabled agent is not activated by an event (409 agent_disabled), and nothing is created', async () => {
    const { cp } = await localSetup({ enabled: false });
    const err = await cp
      .startTurn({ tenant: 'acme', agentId: 'releaser', text: 'wake up', cause: 'event' })
      .catch((e: unknown) => e);
    expect(isAgentError(err) && [err.code, err.httpStatus]).toEqual(['agent_disabled', 409]);
    expect(cp.ledger.read().turns).toEqual({});
  });

  it('a tool this deployment cannot run yet is refused with a typed error, and so is an ungranted one', async () => {
    const { cp, store } = await localSetup({ tools: ['start_experiment', 'read_run'] });
    const { runId } = await cp.startTurn({ tenant: 'acme', agentId: 'releaser', text: 'Evaluate.' });
    const provider = new ScriptedProvider([
      {
        toolCalls: [
          { tool: 'start_experiment', args: { harness: 'swe-lite' } },
          { tool: 'run_command', args: { command: ['ls'] } },
          { tool: 'read_run', args: { runId: 42 } },
        ],
      },
      { content: 'cannot' },
    ]);
    const [out] = await workOnce({ controlPlane: cp, store, provider: () => provider, holder: 'h' });
    expect(out).toMatchObject({ result: 'succeeded' });
    const results = (await store.read('acme', runId, { offset: 0, limit: 100 })).items.filter(
      (e) => e.type === 'tool_result',
    );
    expect(
      results.map((r) => r.type === 'tool_result' && (r.output as { error: { code: string } }).error.code),
    ).toEqual(['tool_unavailable', 'tool_unavailable', 'bad_request']);
    expect(cp.causedRuns(runId)).toEqual([]);
  });
});
