// Issue 16, the control plane's side, on the real core (a migrated PGlite per file) through the real app:
// the registry and its versions, a conversation's turn leased like a runner's run, a park held as a
// transcript and resumed after POST /runs/:id/input, the record verifying `non_blocking` with a nonzero
// estimated idle energy; a 5-run envelope admitting exactly 5 of 50 caused runs (402 for the rest) and the
// cancel cascading to them; a disabled agent not activated by an event.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, call, INTERNAL_TOKEN, type TestApp, testApp } from '../http/testing/harness.js';
import { consumeOnce } from '../scheduler/subscriptions-consumer.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const svc = { authorization: `Bearer ${INTERNAL_TOKEN}` };
const internal = (method: string, path: string, body?: unknown, tenant = 'default') =>
  call(t.app, method, path, { key: null, body, headers: { ...svc, 'x-everdict-tenant': tenant } });
const HEX_A = 'a'.repeat(64);
const HEX_B = 'b'.repeat(64);
const MANIFEST = 'c'.repeat(64);

async function agent(body: Record<string, unknown> = {}) {
  const r = await call(t.app, 'POST', '/agents', {
    body: { name: 'releaser', model: 'scripted', tools: ['ask_approval', 'run_command'], ...body },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return (r.body.agent as { id: string }).id;
}

async function turn(agentId: string, key = ADMIN_KEY) {
  const conv = await call(t.app, 'POST', '/conversations', { key, body: { agentId } });
  expect(conv.status).toBe(201);
  const convId = (conv.body.group as { id: string; kind: string }).id;
  const msg = await call(t.app, 'POST', `/conversations/${convId}/messages`, {
    key,
    body: { text: 'ship it' },
  });
  expect(msg.status).toBe(202);
  return { convId, run: msg.body.run as Record<string, unknown> & { id: string } };
}

async function leaseOne(holder: string) {
  const r = await internal('POST', '/internal/agent/v1/leases', { holder, free: 1 });
  expect(r.status).toBe(200);
  return (r.body.leases as Array<Record<string, unknown> & { runId: string; epoch: number }>)[0];
}

describe('agents: the registry', () => {
  it('a behaviour change is a new version; name and enabled are not', async () => {
    const id = await agent({ systemPrompt: 'one' });
    const renamed = await call(t.app, 'PATCH', `/agents/${id}`, { body: { name: 'shipper' } });
    expect(renamed.body).toMatchObject({ name: 'shipper', version: 1 });
    const changed = await call(t.app, 'PATCH', `/agents/${id}`, { body: { systemPrompt: 'two' } });
    expect(changed.body).toMatchObject({ version: 2, systemPrompt: 'two' });
    const same = await call(t.app, 'PATCH', `/agents/${id}`, {
      body: { systemPrompt: 'two', enabled: false },
    });
    expect(same.body).toMatchObject({ version: 2, enabled: false });
    const list = await call(t.app, 'GET', '/agents');
    expect((list.body.items as { id: string }[]).map((a) => a.id)).toContain(id);
    expect((await call(t.app, 'GET', '/agents/agent_nope')).status).toBe(404);
    const bad = await call(t.app, 'POST', '/agents', { body: { name: 'x', model: 'm', tools: ['rm_rf'] } });
    expect(bad.status).toBe(400);
  });
});

describe('agents: a turn parks as a transcript and resumes after an approval', () => {
  it('leases like a runner, parks, resumes with idle energy, verifies non_blocking', async () => {
    const id = await agent({ envelope: { runs: 5, usd: 1 } });
    const member = await t.key('member');
    const { convId, run } = await turn(id);
    expect(run).toMatchObject({ kind: 'agent', status: 'queued', class: 'interactive' });
    expect(run.origin).toMatchObject({ cause: 'member' });
    expect(run.group).toMatchObject({ id: convId, role: 'turn' });
    expect(run.envelope).toMatchObject({ capRuns: 6, capUsd: 1 }); // the turn + its 5 caused runs

    const lease = await leaseOne('host-a');
    expect(lease).toMatchObject({ runId: run.id, epoch: 1, input: { text: 'ship it' }, record: null });
    expect(lease?.agent).toMatchObject({ id, version: '1', tools: ['ask_approval', 'run_command'] });
    const held = { holder: 'host-a', epoch: 1 };
    const asked = await internal('POST', `/internal/agent/v1/runs/${run.id}/calls`, {
      ...held,
      callId: 'call_1',
      tool: 'ask_approval',
      input: { question: 'ship?' },
    });
    expect(asked.status).toBe(201);
    const events = [
      {
        type: 'message',
        seq: 0,
        ts: new Date().toISOString(),
        runId: run.id,
        role: 'user',
        content: 'ship it',
      },
    ];
    expect(
      (await internal('POST', `/internal/agent/v1/runs/${run.id}/transcript`, { ...held, events })).status,
    ).toBe(202);
    // A stale epoch is refused and changes nothing.
    const stale = await internal('POST', '/internal/agent-run-events', {
      runId: run.id,
      event: 'awaiting_input',
      holder: 'host-a',
      epoch: 7,
      transcript: HEX_A,
      transcriptBytes: 100,
    });
    expect(stale.status).toBe(409);
    expect(stale.body.code).toBe('stale_lease');
    const parked = await internal('POST', '/internal/agent-run-events', {
      runId: run.id,
      event: 'awaiting_input',
      ...held,
      transcript: HEX_A,
      transcriptBytes: 4096,
      manifest: MANIFEST,
      account: { dispatched: ['call_1'], resolved: [] },
      usage: { inputTokens: 10, outputTokens: 5, costUsd: 0.001, llmCalls: 1 },
    });
    expect(parked.status).toBe(200);
    expect(parked.body.status).toBe('awaiting_input');
    // Not ready until a person answers; a member who did not start the turn may not answer it.
    expect(await leaseOne('host-b')).toBeUndefined();
    // What it waits on, with the call's id: listed for its creator or an admin, nobody else.
    const waiting = await call(t.app, 'GET', `/runs/${run.id}/input`);
    expect(waiting.status).toBe(200);
    expect(waiting.body).toEqual({
      runId: run.id,
      status: 'awaiting_input',
      pending: [
        {
          callId: 'call_1',
          kind: 'approval',
          tool: 'ask_approval',
          prompt: 'ship?',
          since: expect.any(String),
        },
      ],
    });
    expect((await call(t.app, 'GET', `/runs/${run.id}/input`, { key: member })).status).toBe(403);
    expect((await call(t.app, 'GET', '/runs/run_nope/input')).status).toBe(404);
    const foreign = await call(t.app, 'POST', `/runs/${run.id}/input`, {
      key: member,
      body: { callId: 'call_1', approved: true },
    });
    expect(foreign.status).toBe(403);
    expect(
      (await call(t.app, 'POST', `/runs/${run.id}/input`, { body: { callId: 'nope', approved: true } }))
        .status,
    ).toBe(404);
    const answered = await call(t.app, 'POST', `/runs/${run.id}/input`, {
      body: { callId: 'call_1', approved: true, note: 'go' },
    });
    expect(answered.status).toBe(200);
    expect(
      (await call(t.app, 'POST', `/runs/${run.id}/input`, { body: { callId: 'call_1', approved: false } }))
        .status,
    ).toBe(409);
    expect((await call(t.app, 'GET', `/runs/${run.id}/input`)).body.pending).toEqual([]);

    const again = await leaseOne('host-b');
    expect(again).toMatchObject({ runId: run.id, epoch: 2 });
    expect(again?.parkedAtMs).toBeGreaterThan(0);
    expect(again?.resolutions).toEqual([
      { kind: 'approval', callId: 'call_1', approved: true, note: 'go', by: expect.any(String) },
    ]);
    const held2 = { holder: 'host-b', epoch: 2 };
    // The old holder's epoch is stale now.
    const late = await internal('POST', `/internal/agent/v1/runs/${run.id}/transcript`, {
      ...held,
      events: [],
    });
    expect(late.body.code).toBe('stale_lease');
    const forged = await internal('POST', '/internal/agent-run-events', {
      runId: run.id,
      event: 'resumed',
      ...held2,
      transcript: HEX_B,
      manifest: MANIFEST,
    });
    expect(forged.body.code).toBe('snapshot_mismatch');
    const otherManifest = await internal('POST', '/internal/agent-run-events', {
      runId: run.id,
      event: 'resumed',
      ...held2,
      transcript: HEX_A,
      manifest: HEX_B,
    });
    expect(otherManifest.body.code).toBe('manifest_mismatch');
    const resumed = await internal('POST', '/internal/agent-run-events', {
      runId: run.id,
      event: 'resumed',
      ...held2,
      transcript: HEX_A,
      manifest: MANIFEST,
    });
    expect(resumed.status).toBe(200);
    expect(resumed.body.status).toBe('running');
    const done = await internal('POST', '/internal/agent-run-events', {
      runId: run.id,
      event: 'succeeded',
      ...held2,
      account: { dispatched: [], resolved: ['call_1'] },
      outputs: { summary: 'shipped' },
    });
    expect(done.status).toBe(200);
    const record = await call(t.app, 'GET', `/runs/${run.id}/record`);
    const verify = record.body.verify as Record<string, unknown>;
    expect(verify).toMatchObject({ ok: true, phase: 'closed', account: 'non_blocking' });
    expect(BigInt(verify.idleUj as string)).toBeGreaterThan(0n);
    const wire = record.body.wire as { segments: Array<{ kind: string; idle_provenance?: string }> };
    expect(wire.segments.map((s) => s.kind)).toEqual([
      'executed',
      'suspended',
      'resumed',
      'executed',
      'closed',
    ]);
    // The park's label is in the transcript: bytes × seconds × W/GB, estimated.
    const page = await internal('GET', `/internal/agent/v1/runs/${run.id}/transcript`);
    const label = (page.body.events as Array<Record<string, unknown>>).find((e) => e.ext === 'everdict/park');
    expect(label?.data).toMatchObject({
      bytes: 4096,
      provenance: 'estimated',
      wattsPerGb: 0.0012,
      transcript: HEX_A,
    });
  }, 60_000);

  it('a turn that awaited its call inside one interval verifies blocking', async () => {
    const id = await agent();
    const { run } = await turn(id);
    const lease = await leaseOne('host-c');
    const held = { holder: 'host-c', epoch: lease!.epoch };
    await internal('POST', `/internal/agent/v1/runs/${run.id}/calls`, {
      ...held,
      callId: 'c1',
      tool: 'ask_approval',
      input: { question: '?' },
    });
    await call(t.app, 'POST', `/runs/${run.id}/input`, { body: { callId: 'c1', approved: false } });
    const seen = await internal('POST', `/internal/agent/v1/runs/${run.id}/resolutions`, held);
    expect(seen.body.resolutions).toMatchObject([{ callId: 'c1', approved: false }]);
    await internal('POST', '/internal/agent-run-events', {
      runId: run.id,
      event: 'succeeded',
      ...held,
      account: { dispatched: ['c1'], resolved: ['c1'] },
    });
    const record = await call(t.app, 'GET', `/runs/${run.id}/record`);
    expect((record.body.verify as { account: string }).account).toBe('blocking');
  });

  it("a failed report's error is run-model's RunError: an empty code is 400 and changes nothing; retryable and detail are kept", async () => {
    const { run } = await turn(await agent());
    const lease = await leaseOne('host-e');
    const held = { holder: 'host-e', epoch: lease!.epoch };
    const bad = await internal('POST', '/internal/agent-run-events', {
      runId: run.id,
      event: 'failed',
      ...held,
      error: { code: '', message: 'x' },
    });
    expect(bad.status, JSON.stringify(bad.body)).toBe(400);
    expect((await call(t.app, 'GET', `/runs/${run.id}`)).body.status).toBe('running');
    const error = {
      code: 'model_error',
      message: 'the model refused',
      retryable: true,
      detail: { status: 529 },
    };
    const ok = await internal('POST', '/internal/agent-run-events', {
      runId: run.id,
      event: 'failed',
      ...held,
      error,
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect((await call(t.app, 'GET', `/runs/${run.id}`)).body).toMatchObject({ status: 'failed', error });
  });
});

describe('agents: start_experiment starts an experiment group', () => {
  it('one group of N eval runs caused by the turn, drawing from its envelope; resolved when all settle', async () => {
    const h = { id: 'agent-echo', version: '1', image: 'default', command: ['true'] };
    expect((await call(t.app, 'POST', '/harnesses', { body: h })).status).toBe(201);
    const id = await agent({ tools: ['start_experiment', 'read_run'], envelope: { runs: 4 } });
    const { run } = await turn(id);
    const lease = await leaseOne('host-e');
    const held = { holder: 'host-e', epoch: lease!.epoch };
    const start = (callId: string, input: Record<string, unknown>) =>
      internal('POST', `/internal/agent/v1/runs/${run.id}/calls`, {
        ...held,
        callId,
        tool: 'start_experiment',
        input,
      });
    const experiments = async () =>
      ((await call(t.app, 'GET', '/groups?kind=experiment')).body.items as unknown[]).length;
    const before = await experiments();
    const started = await start('x1', {
      harness: 'agent-echo@1',
      dataset: 'smoke',
      cases: [{ id: 'a' }, { id: 'b' }, { id: 'c' }],
    });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    const { groupId, runIds } = started.body as { groupId: string; runIds: string[] };
    expect(started.body).toMatchObject({
      callId: 'x1',
      runId: null,
      groupId: expect.stringMatching(/^grp_/),
    });
    expect(runIds).toHaveLength(3);
    // The same call again is the same group (idempotent per call id).
    expect((await start('x1', { harness: 'agent-echo@1', repeat: 1 })).body).toEqual(started.body);
    const group = await call(t.app, 'GET', `/groups/${groupId}`);
    expect(group.body).toMatchObject({ kind: 'experiment', label: 'smoke', runIds: [...runIds].sort() });
    for (const rid of runIds) {
      const r = await call(t.app, 'GET', `/runs/${rid}`);
      expect(r.body).toMatchObject({
        kind: 'eval',
        group: { id: groupId, role: 'case' },
        origin: { cause: 'run', causedByRunId: run.id },
      });
    }
    // The envelope has one caused run left: a 2-run experiment is refused whole — no group, no call.
    const refused = await start('x2', { harness: 'agent-echo@1', repeat: 2 });
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({ code: 'envelope_exhausted', rule: 'envelope' });
    expect(await experiments()).toBe(before + 1);
    // An unknown harness version is refused, not a 500.
    const unknown = await start('x3', { harness: 'nope@1' });
    expect(unknown.status, JSON.stringify(unknown.body)).toBe(404);
    expect((await start('x4', { harness: 'agent-echo@1', repeat: 1, cases: [{}] })).status).toBe(400);

    const parked = await internal('POST', '/internal/agent-run-events', {
      runId: run.id,
      event: 'awaiting_input',
      ...held,
      transcript: HEX_A,
      transcriptBytes: 100,
      manifest: MANIFEST,
      account: { dispatched: ['x1'], resolved: [] },
    });
    expect(parked.status).toBe(200);
    const pending = await call(t.app, 'GET', `/runs/${run.id}/input`);
    expect(pending.body.pending).toEqual([
      {
        callId: 'x1',
        kind: 'experiment',
        tool: 'start_experiment',
        groupId,
        waitingOn: [...runIds].sort(),
        since: expect.any(String),
      },
    ]);
    // A run that is not a turn waits on nothing a person answers.
    expect((await call(t.app, 'GET', `/runs/${runIds[0]}/input`)).status).toBe(404);
    // Not ready while any run of the group is unsettled.
    const [first, ...rest] = [...runIds].sort();
    await call(t.app, 'POST', `/runs/${first}/cancel`, { body: { reason: 'one' } });
    expect(await leaseOne('host-f')).toBeUndefined();
    expect((await call(t.app, 'GET', `/runs/${run.id}/input`)).body.pending).toMatchObject([
      { callId: 'x1', waitingOn: rest },
    ]);
    for (const rid of rest) await call(t.app, 'POST', `/runs/${rid}/cancel`, { body: { reason: 'rest' } });
    const again = await leaseOne('host-f');
    expect(again?.runId).toBe(run.id);
    expect(again?.resolutions).toEqual([
      {
        kind: 'experiment',
        callId: 'x1',
        groupId,
        status: 'cancelled',
        runs: [...runIds].sort().map((runId) => ({ runId, status: 'cancelled' })),
      },
    ]);
    // Resumed, its runs' outputs are read with the read tool.
    const held2 = { holder: 'host-f', epoch: again!.epoch };
    const resumed = await internal('POST', '/internal/agent-run-events', {
      runId: run.id,
      event: 'resumed',
      ...held2,
      transcript: HEX_A,
      manifest: MANIFEST,
    });
    expect(resumed.status).toBe(200);
    const read = await internal('POST', `/internal/agent/v1/runs/${run.id}/read`, {
      ...held2,
      runId: first,
      what: 'outputs',
    });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ runId: first, kind: 'eval', status: 'cancelled' });
  }, 60_000);
});

describe('agents: the envelope and the causal tree', () => {
  it('a 5-run envelope admits 5 of 50 caused runs (402 for the rest); cancelling the turn cancels them', async () => {
    const id = await agent({ envelope: { runs: 5 } });
    const { run } = await turn(id);
    const lease = await leaseOne('host-d');
    const held = { holder: 'host-d', epoch: lease!.epoch };
    const statuses: number[] = [];
    for (let i = 0; i < 50; i++) {
      const r = await internal('POST', `/internal/agent/v1/runs/${run.id}/calls`, {
        ...held,
        callId: `c${i}`,
        tool: 'run_command',
        input: { command: ['echo', String(i)] },
      });
      statuses.push(r.status);
      if (r.status === 402) expect(r.body).toMatchObject({ code: 'envelope_exhausted', rule: 'envelope' });
    }
    expect(statuses.filter((s) => s === 201)).toHaveLength(5);
    expect(statuses.filter((s) => s === 402)).toHaveLength(45);
    const caused = await call(t.app, 'GET', `/runs?causedBy=${run.id}`);
    const items = caused.body.items as Array<{
      status: string;
      origin: { cause: string; causedByRunId: string };
    }>;
    expect(items).toHaveLength(5);
    expect(items.every((r) => r.origin.cause === 'run' && r.status === 'queued')).toBe(true);
    const cancelled = await call(t.app, 'POST', `/runs/${run.id}/cancel`, { body: { reason: 'stop' } });
    expect(cancelled.status).toBe(200);
    const after = await call(t.app, 'GET', `/runs?causedBy=${run.id}`);
    await expect
      .poll(async () =>
        ((await call(t.app, 'GET', `/runs?causedBy=${run.id}`)).body.items as { status: string }[]).map(
          (r) => r.status,
        ),
      )
      .toEqual(['cancelled', 'cancelled', 'cancelled', 'cancelled', 'cancelled']);
    expect(after.status).toBe(200);
    // The holder learns it at its next heartbeat.
    const hb = await internal('POST', '/internal/agent/v1/heartbeat', {
      holder: 'host-d',
      leases: [{ runId: run.id, epoch: held.epoch }],
    });
    expect(hb.body.lost).toEqual([run.id]);
  }, 60_000);

  it('an event activates an enabled agent (background, event-caused); a disabled one is not activated', async () => {
    const id = await agent();
    const sub = await call(t.app, 'POST', '/subscriptions', {
      body: {
        name: 'on analysis',
        selector: { kind: 'run.queued', filter: { kind: 'analysis' } },
        runSpec: {
          kind: 'agent',
          subject: { agentId: id, agentVersion: 'current', permissionMode: 'ask' },
          placement: { where: 'runtime' },
        },
      },
    });
    expect(sub.status).toBe(201);
    const spark = () =>
      call(t.app, 'POST', '/runs', { body: { kind: 'analysis', subject: { config: { fn: 'echo' } } } });
    const firings = async () =>
      t.core.internals.deps.db
        .selectFrom('subscription_firings')
        .select(['outcome', 'run_id'])
        .where('subscription_id', '=', (sub.body as { id: string }).id)
        .execute();
    await spark();
    while ((await consumeOnce(t.core.internals.deps)) > 0);
    const [first] = await firings();
    expect(first?.outcome).toBe('created');
    const activated = await call(t.app, 'GET', `/runs/${first?.run_id}`);
    expect(activated.body).toMatchObject({ kind: 'agent', class: 'background', origin: { cause: 'event' } });
    expect(activated.body.subject).toMatchObject({ agentId: id, agentVersion: '1' });

    expect((await call(t.app, 'PATCH', `/agents/${id}`, { body: { enabled: false } })).status).toBe(200);
    await spark();
    while ((await consumeOnce(t.core.internals.deps)) > 0);
    const outcomes = (await firings()).map((f) => f.outcome);
    expect(outcomes).toEqual(['created', 'refused:conflict:agent_disabled']);
    // …nor by a message.
    const conv = await call(t.app, 'POST', '/conversations', { body: { agentId: id } });
    const msg = await call(
      t.app,
      'POST',
      `/conversations/${(conv.body.group as { id: string }).id}/messages`,
      { body: { text: 'hi' } },
    );
    expect(msg.status).toBe(409);
  }, 60_000);
});
