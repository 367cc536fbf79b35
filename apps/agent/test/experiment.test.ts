// `start_experiment` on a REAL control plane (the built dist, embedded PGlite): the model's one tool call
// starts an experiment GROUP of eval runs — each caused by the turn through the one gate, drawing from the
// agent's envelope — and the turn parks on it. When every run of the group has settled, the next process
// resumes with the group's result (its id, rollup and runs), reads one run's outputs with `read_run`, and
// answers. The record accounts the park `non_blocking`.
import { dataOf } from '@everdict/client';
import type { TraceEvent } from '@everdict/run-model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workOnce } from '../src/loop/worker.js';
import type { ChatMessage } from '../src/model/provider.js';
import { ScriptedProvider } from '../src/model/scripted-provider.js';
import { createAgent, message, pairCommandRunner, recordOf, type Seat, seat } from './support.js';

let s: Seat;
beforeAll(async () => {
  s = await seat();
  await pairCommandRunner(s, ['eval']); // eval runs are placeable; they stay queued
  await s.admin.POST('/harnesses', {
    body: { id: 'agent-echo', version: '1', image: 'default', command: ['true'] },
  });
}, 300_000);
afterAll(async () => {
  await s?.stop();
});

const lastTool = (messages: readonly ChatMessage[]) =>
  [...messages].reverse().find((m) => m.role === 'tool')?.content ?? '';

describe('start_experiment', () => {
  it('starts one experiment group of N caused eval runs; the turn resumes with its result and reads a run', async () => {
    const agentId = await createAgent(s, { tools: ['start_experiment', 'read_run'], envelope: { runs: 3 } });
    const runId = await message(s, agentId, 'Evaluate the echo harness on two cases.');
    const provider = new ScriptedProvider([
      {
        toolCalls: [
          {
            tool: 'start_experiment',
            args: { harness: 'agent-echo@1', dataset: 'smoke', cases: [{ id: 'a' }, { id: 'b' }] },
          },
        ],
      },
      (messages) => {
        const result = JSON.parse(lastTool(messages)) as { runs: { runId: string }[] };
        return { toolCalls: [{ tool: 'read_run', args: { runId: result.runs[0]?.runId } }] };
      },
      (messages) => ({ content: `read: ${lastTool(messages)}` }),
    ]);
    const worker = { controlPlane: s.agents, provider: () => provider, holder: 'h' };
    const [parked] = await workOnce(worker, 5000);
    expect(parked).toMatchObject({ result: 'parked', runId, outstanding: ['call_0_0'] });

    // The group it started is in the transcript at once, and in the ledger: kind experiment, 2 eval runs
    // caused by the turn.
    const page = dataOf(
      await s.admin.GET('/runs/{id}/trajectory', { params: { path: { id: runId }, query: { limit: 1000 } } }),
    );
    const started = (page.items as TraceEvent[]).find(
      (e) => e.type === 'extension' && e.ext === 'everdict/experiment',
    );
    const { groupId, runIds } = (started as unknown as { data: { groupId: string; runIds: string[] } }).data;
    expect(runIds).toHaveLength(2);
    const group = dataOf(await s.admin.GET('/groups/{id}', { params: { path: { id: groupId } } }));
    expect(group).toMatchObject({ kind: 'experiment', label: 'smoke', runIds });
    const caused = dataOf(await s.admin.GET('/runs', { params: { query: { causedBy: runId } } }));
    expect(caused.items.map((r) => r.id).sort()).toEqual(runIds);
    expect(caused.items.every((r) => r.kind === 'eval' && r.group?.id === groupId)).toBe(true);
    const pending = dataOf(await s.admin.GET('/runs/{id}/input', { params: { path: { id: runId } } }));
    expect(pending.pending).toMatchObject([
      { callId: 'call_0_0', kind: 'experiment', groupId, waitingOn: runIds },
    ]);

    // Settle the group's runs (cancelled here: no runner executes them); then any process resumes the turn.
    for (const id of runIds)
      await s.admin.POST('/runs/{id}/cancel', { params: { path: { id } }, body: { reason: 'settle' } });
    const [done] = await workOnce(worker, 5000);
    expect(done).toMatchObject({ result: 'succeeded', runId });
    const summary = done?.result === 'succeeded' ? done.summary : '';
    expect(JSON.parse(summary.replace(/^read: /, ''))).toMatchObject({
      runId: runIds[0],
      kind: 'eval',
      status: 'cancelled',
    });
    const after = dataOf(
      await s.admin.GET('/runs/{id}/trajectory', { params: { path: { id: runId }, query: { limit: 1000 } } }),
    );
    const result = (after.items as TraceEvent[]).find(
      (e) => e.type === 'tool_result' && e.callId === 'call_0_0',
    );
    expect(result).toMatchObject({
      output: {
        groupId,
        status: 'cancelled',
        runs: runIds.map((id) => ({ runId: id, status: 'cancelled' })),
      },
      isError: true,
    });
    const record = await recordOf(s, runId);
    expect(record.verify).toMatchObject({ ok: true, phase: 'closed', account: 'non_blocking' });
  }, 180_000);
});
