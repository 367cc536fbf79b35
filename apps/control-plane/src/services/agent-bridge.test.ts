// The agent bridge: every reported transition lands as the right status AND the right record segments;
// sequences the status machine refuses are a 409 that changes nothing; NUL never reaches the ledger.
import { AgentSubject } from '@everdict/run-model';
import { verifyWire } from '@everdict/runrecord';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestCore, testCore } from '../../test/core.js';
import type { RunView } from '../ledger/views.js';
import type { AgentRunEventInput } from './types.js';

let t: TestCore;
beforeAll(async () => {
  t = await testCore({ scheduler: { enabled: false } });
});
afterAll(async () => {
  await t.close();
});

interface WireSeg {
  kind: string;
  snapshot?: Record<string, string>;
  manifest?: string;
  idle_uj?: string;
  idle_provenance?: string;
  reason?: string;
}

const report = (input: AgentRunEventInput) => t.core.services.agentBridge.report(t.admin, input);
const TRANSCRIPT = 'ab'.repeat(32);

async function segments(runId: string): Promise<WireSeg[]> {
  const rec = await t.core.services.runs.record(t.admin, runId);
  expect(rec.verify.ok, JSON.stringify(rec.verify)).toBe(true);
  const v = verifyWire(rec.wire);
  expect(v.ok).toBe(true);
  return (rec.wire as { segments: WireSeg[] }).segments;
}

async function snapshotOf(runId: string) {
  const run = await t.core.services.runs.get(t.admin, runId);
  const events = await t.core.services.runs.events(t.admin, runId);
  return { status: run.status, record: run.record, outputs: run.outputs, events: events.items.length };
}

async function started(): Promise<RunView> {
  return report({ event: 'started', agent: { agentId: 'helper' } });
}

describe('agent bridge: transitions and record segments', () => {
  it('opens a running agent run with a real run-model permissionMode (default ask), no segment yet', async () => {
    const run = await started();
    expect(run.status).toBe('running');
    expect(run.subject).toMatchObject({ agentId: 'helper', permissionMode: 'ask' });
    expect(AgentSubject.safeParse(run.subject).success).toBe(true);
    expect(await segments(run.id)).toEqual([]);
    expect(run.origin).toMatchObject({ cause: 'event', eventKind: 'agent.activated' });
  });

  it('awaiting_input: status awaiting_input; executed (yielded) + suspended(snapshot, manifest)', async () => {
    const run = await started();
    const parked = await report({ runId: run.id, event: 'awaiting_input', transcript: TRANSCRIPT });
    expect(parked.status).toBe('awaiting_input');
    const segs = await segments(run.id);
    expect(segs.map((s) => s.kind)).toEqual(['executed', 'suspended']);
    expect(segs[1]?.snapshot).toEqual({ transcript: TRANSCRIPT });
    expect(segs[1]?.manifest).toMatch(/^[0-9a-f]{64}$/);
  });

  it('suspended → resumed → succeeded: suspended, resumed (idle energy + provenance), executed, closed', async () => {
    const run = await started();
    expect((await report({ runId: run.id, event: 'suspended', transcript: TRANSCRIPT })).status).toBe(
      'awaiting_input',
    );
    const resumed = await report({ runId: run.id, event: 'resumed', transcript: TRANSCRIPT });
    expect(resumed.status).toBe('running');
    let segs = await segments(run.id);
    expect(segs.map((s) => s.kind)).toEqual(['executed', 'suspended', 'resumed']);
    expect(segs[2]).toMatchObject({ snapshot: { transcript: TRANSCRIPT }, idle_provenance: 'estimated' });
    expect(BigInt(segs[2]?.idle_uj ?? '0')).toBeGreaterThan(0n);
    const done = await report({
      runId: run.id,
      event: 'succeeded',
      outputs: { summary: 'fixed the test', result: { files: 2 }, exitCode: 0 },
    });
    expect(done.status).toBe('succeeded');
    expect(done.outputs).toMatchObject({ summary: 'fixed the test', result: { files: 2 }, exitCode: 0 });
    segs = await segments(run.id);
    expect(segs.map((s) => s.kind)).toEqual(['executed', 'suspended', 'resumed', 'executed', 'closed']);
    expect(segs[4]?.reason).toBe('completed');
  });

  it('failed while running: executed + closed(failed), the error on the run', async () => {
    const run = await started();
    const failed = await report({
      runId: run.id,
      event: 'failed',
      error: { code: 'tool_crashed', message: 'boom' },
    });
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'tool_crashed' } });
    const segs = await segments(run.id);
    expect(segs.map((s) => [s.kind, s.reason])).toEqual([
      ['executed', undefined],
      ['closed', 'failed'],
    ]);
  });

  it('cancelled while parked: no interval was open, so only closed(cancelled)', async () => {
    const run = await started();
    await report({ runId: run.id, event: 'awaiting_input', transcript: TRANSCRIPT });
    const cancelled = await report({ runId: run.id, event: 'cancelled' });
    expect(cancelled.status).toBe('cancelled');
    const segs = await segments(run.id);
    expect(segs.map((s) => [s.kind, s.reason])).toEqual([
      ['executed', undefined],
      ['suspended', undefined],
      ['closed', 'cancelled'],
    ]);
  });

  it('started for a queued run is a 409 not_claimed: a queued run starts only through its lease claim', async () => {
    const { run } = await t.core.services.runs.create(t.admin, {
      kind: 'agent',
      subject: { agentId: 'handed', agentVersion: '1', permissionMode: 'read_only' },
      placement: { where: 'runtime' },
    });
    const prior = await snapshotOf(run.id);
    const refused = await report({ runId: run.id, event: 'started' }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'conflict', details: { reason: 'not_claimed' } });
    expect(await snapshotOf(run.id)).toEqual(prior);
    expect(prior.status).toBe('queued');
  });
});

describe('agent bridge: illegal sequences are a 409 and change nothing', () => {
  const cases: [string, AgentRunEventInput['event'][], AgentRunEventInput['event']][] = [
    ['resumed while running', [], 'resumed'],
    ['started twice', [], 'started'],
    ['awaiting_input while parked', ['awaiting_input'], 'awaiting_input'],
    ['suspended while parked', ['suspended'], 'suspended'],
    ['succeeded while parked', ['awaiting_input'], 'succeeded'],
    ['a second settle', ['succeeded'], 'failed'],
    ['resumed after cancel', ['cancelled'], 'resumed'],
  ];
  for (const [name, before, illegal] of cases) {
    it(name, async () => {
      const run = await started();
      for (const event of before) await report({ runId: run.id, event, transcript: TRANSCRIPT });
      const prior = await snapshotOf(run.id);
      const refused = await report({ runId: run.id, event: illegal, transcript: TRANSCRIPT }).catch(
        (e: unknown) => e,
      );
      expect(refused).toMatchObject({ code: 'conflict', httpStatus: 409 });
      expect(await snapshotOf(run.id)).toEqual(prior);
    });
  }

  it('a queued run cannot be suspended, and a non-agent run is not the bridge’s to drive', async () => {
    const { run } = await t.core.services.runs.create(t.admin, {
      kind: 'sandbox',
      subject: { image: 'alpine:3.20' },
    });
    const prior = await snapshotOf(run.id);
    await expect(report({ runId: run.id, event: 'succeeded' })).rejects.toMatchObject({
      httpStatus: 409,
      details: { reason: 'not_an_agent_run' },
    });
    expect(await snapshotOf(run.id)).toEqual(prior);
    const { run: agent } = await t.core.services.runs.create(t.admin, {
      kind: 'agent',
      subject: { agentId: 'q', agentVersion: '1', permissionMode: 'ask' },
      placement: { where: 'runtime' },
    });
    await expect(report({ runId: agent.id, event: 'suspended' })).rejects.toMatchObject({ httpStatus: 409 });
    expect((await t.core.services.runs.get(t.admin, agent.id)).status).toBe('queued');
  });

  it('refuses a permissionMode run-model does not know (400), and an unknown run (404)', async () => {
    await expect(
      t.core.services.agentBridge.report(t.admin, {
        event: 'started',
        agent: { agentId: 'x', permissionMode: 'default' as 'ask' },
      }),
    ).rejects.toMatchObject({ httpStatus: 400 });
    await expect(report({ runId: 'run_nope', event: 'resumed' })).rejects.toMatchObject({ httpStatus: 404 });
  });
});

describe('NUL at the doors that bypass HTTP: a typed 400, nothing written', () => {
  it('agent bridge payload', async () => {
    const before = (await t.core.services.runs.list(t.admin, { kind: 'agent', limit: 500 })).items.length;
    const refused = await report({ event: 'started', agent: { agentId: 'nul\u0000agent' } }).catch(
      (e: unknown) => e,
    );
    expect(refused).toMatchObject({
      code: 'nul_character',
      httpStatus: 400,
      details: { path: 'agent.agentId' },
    });
    const run = await started();
    await expect(
      report({ runId: run.id, event: 'succeeded', outputs: { summary: 'a\u0000b' } }),
    ).rejects.toMatchObject({ code: 'nul_character' });
    expect((await t.core.services.runs.get(t.admin, run.id)).status).toBe('running');
    expect((await t.core.services.runs.list(t.admin, { kind: 'agent', limit: 500 })).items.length).toBe(
      before + 1,
    );
  });

  it('subscription run specs (and event selectors)', async () => {
    await expect(
      t.core.services.subscriptions.create(t.admin, {
        name: 'nul',
        selector: { kind: 'run.settled' },
        runSpec: { kind: 'analysis', subject: { config: { fn: 'echo', message: 'x\u0000' } } },
      }),
    ).rejects.toMatchObject({ code: 'nul_character', httpStatus: 400 });
    await expect(
      t.core.services.subscriptions.create(t.admin, {
        name: 'nul',
        selector: { kind: 'run.settled', filter: { 'k\u0000': 1 } },
        runSpec: { kind: 'analysis', subject: { config: { fn: 'echo' } } },
      }),
    ).rejects.toMatchObject({ code: 'nul_character' });
    expect(await t.core.services.subscriptions.list(t.admin)).toEqual([]);
  });

  it('runs and groups created by a direct caller', async () => {
    await expect(
      t.core.services.runs.create(t.admin, { kind: 'analysis', subject: {}, requestId: '\u0000' }),
    ).rejects.toMatchObject({ code: 'nul_character' });
    await expect(
      t.core.services.groups.create(t.admin, {
        kind: 'batch',
        label: 'l\u0000',
        spec: { kind: 'analysis' },
        repeat: 1,
      }),
    ).rejects.toMatchObject({ code: 'nul_character' });
  });
});

describe('agent bridge: only observed evidence (issue 8 §1)', () => {
  const executedAccounts = async (runId: string) =>
    (await segments(runId))
      .filter((s) => s.kind === 'executed')
      .map((s) => (s as { account?: unknown }).account);

  it('an interval with no reported account carries none: the verdict is no_verdict', async () => {
    const run = await started();
    await report({ runId: run.id, event: 'succeeded' });
    expect(await executedAccounts(run.id)).toEqual([undefined]);
    const rec = await t.core.services.runs.record(t.admin, run.id);
    expect(rec.verify).toMatchObject({ ok: true, account: 'no_verdict' });
  });

  it('an interval carries exactly the account the agent reports (dispatched / resolved call ids)', async () => {
    const run = await started();
    const account = { dispatched: ['tool#1', 'tool#2'], resolved: ['tool#1'] };
    await report({ runId: run.id, event: 'awaiting_input', transcript: TRANSCRIPT, account });
    expect(await executedAccounts(run.id)).toEqual([account]);
    const rec = await t.core.services.runs.record(t.admin, run.id);
    expect(rec.verify.ok).toBe(true);
    expect(rec.verify.account).not.toBe('no_verdict');
  });

  it('a park needs its snapshot: no transcript → 400, nothing written, no address invented', async () => {
    const run = await started();
    const prior = await snapshotOf(run.id);
    await expect(report({ runId: run.id, event: 'suspended' })).rejects.toMatchObject({
      httpStatus: 400,
      details: { reason: 'snapshot_required' },
    });
    expect(await snapshotOf(run.id)).toEqual(prior);
  });

  it('a resume offering another snapshot is 409 snapshot_mismatch; nothing written', async () => {
    const run = await started();
    await report({ runId: run.id, event: 'suspended', transcript: TRANSCRIPT });
    const prior = await snapshotOf(run.id);
    await expect(
      report({ runId: run.id, event: 'resumed', transcript: 'cd'.repeat(32) }),
    ).rejects.toMatchObject({
      code: 'snapshot_mismatch',
      httpStatus: 409,
    });
    await expect(report({ runId: run.id, event: 'resumed' })).rejects.toMatchObject({ httpStatus: 400 });
    expect(await snapshotOf(run.id)).toEqual(prior);
    expect((await report({ runId: run.id, event: 'resumed', transcript: TRANSCRIPT })).status).toBe(
      'running',
    );
  });

  it('a resume from another environment (manifest) is 409 manifest_mismatch; nothing written', async () => {
    const run = await started();
    const manifest = '12'.repeat(32);
    await report({ runId: run.id, event: 'suspended', transcript: TRANSCRIPT, manifest });
    expect((await segments(run.id)).at(-1)?.manifest).toBe(manifest);
    const prior = await snapshotOf(run.id);
    await expect(
      report({ runId: run.id, event: 'resumed', transcript: TRANSCRIPT, manifest: '34'.repeat(32) }),
    ).rejects.toMatchObject({ code: 'manifest_mismatch', httpStatus: 409 });
    expect(await snapshotOf(run.id)).toEqual(prior);
    expect((await report({ runId: run.id, event: 'resumed', transcript: TRANSCRIPT, manifest })).status).toBe(
      'running',
    );
  });
});
