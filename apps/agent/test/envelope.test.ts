// Issue 16's proof, the envelope half, on a REAL control plane (the built dist, embedded PGlite): an agent
// whose envelope affords 5 caused runs asks for 50 in one step — the one gate admits 5 and refuses 45 with
// 402, which the model sees as tool errors; the turn parks on the 5. Cancelling the turn cancels its
// non-terminal descendants and closes its record. A disabled agent is not activated.
import { dataOf, isClientError } from '@everdict/client';
import type { TraceEvent } from '@everdict/run-model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workOnce } from '../src/loop/worker.js';
import { ScriptedProvider } from '../src/model/scripted-provider.js';
import { createAgent, message, pairCommandRunner, recordOf, type Seat, seat } from './support.js';

let s: Seat;
beforeAll(async () => {
  s = await seat();
  await pairCommandRunner(s);
}, 300_000);
afterAll(async () => {
  await s?.stop();
});

const FIFTY = Array.from({ length: 50 }, (_, i) => ({
  tool: 'run_command',
  args: { command: ['echo', String(i)] },
}));

describe('an agent envelope of 5 runs', () => {
  it('admits 5 of 50 caused runs (45 are 402 tool errors); cancelling the turn cancels the 5', async () => {
    const agentId = await createAgent(s, { tools: ['run_command'], envelope: { runs: 5, usd: 5 } });
    const runId = await message(s, agentId, 'Run fifty commands.');
    const provider = new ScriptedProvider([{ content: 'Fifty, please.', toolCalls: FIFTY }]);
    const [out] = await workOnce({ controlPlane: s.agents, provider: () => provider, holder: 'h' }, 5000);
    expect(out).toMatchObject({ result: 'parked', runId });
    expect(out?.result === 'parked' && out.outstanding).toHaveLength(5);

    const page = dataOf(
      await s.admin.GET('/runs/{id}/trajectory', { params: { path: { id: runId }, query: { limit: 1000 } } }),
    );
    const results = (page.items as TraceEvent[]).filter((e) => e.type === 'tool_result');
    expect(results).toHaveLength(45);
    for (const r of results) {
      expect(r.type === 'tool_result' && r.isError).toBe(true);
      expect(r.type === 'tool_result' && r.output).toMatchObject({
        error: { code: 'envelope_exhausted', status: 402 },
      });
    }
    const caused = dataOf(await s.admin.GET('/runs', { params: { query: { causedBy: runId, limit: 500 } } }));
    expect(caused.items).toHaveLength(5);
    expect(
      caused.items.every((r) => r.kind === 'command' && r.status === 'queued' && r.origin.cause === 'run'),
    ).toBe(true);
    const parked = await recordOf(s, runId);
    expect(parked.verify).toMatchObject({ ok: true, phase: 'parked' });

    const cancelled = dataOf(
      await s.admin.POST('/runs/{id}/cancel', {
        params: { path: { id: runId } },
        body: { reason: 'enough' },
      }),
    );
    expect(cancelled.run.status).toBe('cancelled');
    for (let i = 0; ; i++) {
      const now = dataOf(await s.admin.GET('/runs', { params: { query: { causedBy: runId, limit: 500 } } }));
      if (now.items.every((r) => r.status === 'cancelled')) break;
      if (i > 400) throw new Error(`caused runs not cancelled: ${now.items.map((r) => r.status)}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    const closed = await recordOf(s, runId);
    expect(closed.verify).toMatchObject({ ok: true, phase: 'closed' });
    expect(await s.agents.lease({ free: 4, holder: 'late' })).toEqual([]);
  }, 180_000);

  it('a disabled agent is not activated: its message is refused 409 and no turn is created', async () => {
    const agentId = await createAgent(s, { tools: ['run_command'] });
    await s.admin.PATCH('/agents/{id}', { params: { path: { id: agentId } }, body: { enabled: false } });
    const conv = dataOf(await s.admin.POST('/conversations', { body: { agentId } }));
    const err = await s.admin
      .POST('/conversations/{id}/messages', { params: { path: { id: conv.group.id } }, body: { text: 'hi' } })
      .catch((e: unknown) => e);
    expect(isClientError(err) && [err.status, err.code, err.problem?.rule]).toEqual([
      409,
      'conflict',
      'agent_disabled',
    ]);
    const turns = dataOf(await s.admin.GET('/runs', { params: { query: { groupId: conv.group.id } } }));
    expect(turns.items).toEqual([]);
  }, 60_000);
});
