// Issue 16's proof, agent half: a turn whose tool call waits on an approval. The first agent process (a
// real child process) ends the interval, parks the turn as its transcript and EXITS; the approval arrives
// (POST /runs/:id/input's local seat); a second process, which shares nothing with the first but the
// store and the ledger, resumes from the transcript alone. The record verifies `non_blocking` with a
// nonzero, labelled idle energy. The variant that awaits the approval inside one interval verifies `blocking`.
import { execFile } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { decodeWire, verifyWire } from '@everdict/runrecord';
import { describe, expect, it } from 'vitest';
import { isAgentError } from '../src/errors.js';
import { runInterval } from '../src/loop/interval.js';
import { workOnce } from '../src/loop/worker.js';
import { ScriptedProvider } from '../src/model/scripted-provider.js';
import { PARK_METER } from '../src/record/energy.js';
import { localSetup } from './fixtures.js';

const run = promisify(execFile);
const cli = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'cli.js');

const APPROVAL_SCRIPT = [
  { content: 'I will ask first.', toolCalls: [{ tool: 'ask_approval', args: { question: 'Ship 1.4.0?' } }] },
  { content: 'Answer was {{last_tool_result}} — shipping.' },
];

async function until<T>(probe: () => T | undefined, what: string): Promise<T> {
  for (let i = 0; i < 2000; i++) {
    const v = probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('a turn waiting on an approval', () => {
  it('parks as a transcript, the first process exits, a second resumes from the transcript alone: non_blocking', async () => {
    expect(existsSync(cli), `build first: ${cli}`).toBe(true);
    const { dir, cp, store } = await localSetup();
    const script = path.join(dir, 'script.json');
    writeFileSync(script, JSON.stringify(APPROVAL_SCRIPT));
    const { runId } = await cp.startTurn({ tenant: 'acme', agentId: 'releaser', text: 'Release 1.4.0.' });

    const first = await run(process.execPath, [
      cli,
      'work',
      '--dir',
      dir,
      '--holder',
      'host-a',
      '--script',
      script,
    ]);
    const parked = JSON.parse(first.stdout.trim());
    expect(parked).toMatchObject({ result: 'parked', runId, outstanding: ['call_0_0'] });
    // The process is gone (execFile resolved on its exit, code 0); the turn shows awaiting_input, parked.
    const atPark = cp.turn(runId)!;
    expect(atPark.status).toBe('awaiting_input');
    expect(atPark.holder).toBeUndefined();
    const parkedRecord = verifyWire(atPark.record);
    expect(parkedRecord.ok && parkedRecord.phase).toBe('parked');
    const suspended = decodeWire(atPark.record).segments.at(-1)!;
    expect(suspended.kind === 'suspended' && suspended.snapshot).toEqual({ transcript: parked.transcript });
    // Nothing is ready until the person answers.
    expect(await cp.lease({ free: 1, holder: 'nobody' })).toEqual([]);

    cp.resolveInput(runId, { callId: 'call_0_0', approved: true, note: 'ship it', by: 'member:alice' });
    const second = await run(process.execPath, [
      cli,
      'work',
      '--dir',
      dir,
      '--holder',
      'host-b',
      '--script',
      script,
    ]);
    const done = JSON.parse(second.stdout.trim());
    expect(done.pid).not.toBe(parked.pid);
    expect(done).toMatchObject({ result: 'succeeded', runId });
    expect(done.summary).toBe('Answer was {"approved":true,"note":"ship it"} — shipping.');

    const turn = cp.turn(runId)!;
    expect(turn.status).toBe('succeeded');
    const verdict = verifyWire(turn.record);
    if (!verdict.ok) throw new Error(verdict.error);
    expect(verdict.phase).toBe('closed');
    expect(verdict.account).toEqual({ verdict: 'non_blocking' });
    expect(verdict.idleUj).toBeGreaterThan(0n);
    const segments = decodeWire(turn.record).segments;
    expect(segments.map((s) => s.kind)).toEqual(['executed', 'suspended', 'resumed', 'executed', 'closed']);
    const [exec1, , resumed, exec2] = segments;
    expect(exec1?.kind === 'executed' && exec1.account).toEqual({ dispatched: ['call_0_0'], resolved: [] });
    expect(exec2?.kind === 'executed' && exec2.account).toEqual({ dispatched: [], resolved: ['call_0_0'] });
    expect(resumed?.kind === 'resumed' && resumed.idleProvenance).toBe('estimated');
    expect(resumed?.kind === 'resumed' && resumed.snapshot).toEqual({ transcript: parked.transcript });

    // The transcript is the trajectory: sealed now, with the park's label and priced model calls in it.
    const page = await store.read('acme', runId, { offset: 0, limit: 100 });
    expect(page.sealed).toBe(true);
    const label = page.items.find((e) => e.type === 'extension' && e.ext === 'everdict/park');
    expect(label && label.type === 'extension' && label.data).toMatchObject({
      transcript: parked.transcript,
      provenance: 'estimated',
      meter: PARK_METER,
      idleUj: (resumed?.kind === 'resumed' ? resumed.idleUj : 0n).toString(),
    });
    const llm = page.items.filter((e) => e.type === 'llm_call');
    expect(llm).toHaveLength(2);
    for (const e of llm) {
      expect(e.inputTokens).toBeGreaterThan(0);
      expect(e.costUsd).toBeGreaterThan(0);
    }
    const approvals = page.items.filter((e) => e.type === 'extension' && e.ext === 'approval');
    expect(approvals.map((e) => e.type === 'extension' && (e.data as { decision: string }).decision)).toEqual(
      ['requested', 'approved'],
    );
  }, 120_000);

  it('the same turn awaited inside one interval verifies blocking', async () => {
    const { cp, store } = await localSetup();
    const { runId } = await cp.startTurn({ tenant: 'acme', agentId: 'releaser', text: 'Release 1.4.0.' });
    const provider = new ScriptedProvider(APPROVAL_SCRIPT);
    const working = workOnce({
      controlPlane: cp,
      store,
      provider: () => provider,
      holder: 'h',
      mode: 'blocking',
    });
    await until(() => (cp.turn(runId)?.outstanding.length ? true : undefined), 'the approval request');
    cp.resolveInput(runId, { callId: 'call_0_0', approved: false, note: 'not today' });
    const [out] = await working;
    expect(out).toMatchObject({ result: 'succeeded' });
    const verdict = verifyWire(cp.turn(runId)!.record);
    if (!verdict.ok) throw new Error(verdict.error);
    expect(verdict.account).toEqual({ verdict: 'blocking', index: 0, callId: 'call_0_0' });
    expect(decodeWire(cp.turn(runId)!.record).segments.map((s) => s.kind)).toEqual(['executed', 'closed']);
  });
});

describe('resuming refuses what the park did not record', () => {
  async function parkedTurn() {
    const setup = await localSetup();
    const { runId } = await setup.cp.startTurn({ tenant: 'acme', agentId: 'releaser', text: 'Release.' });
    const provider = new ScriptedProvider(APPROVAL_SCRIPT);
    await workOnce({ controlPlane: setup.cp, store: setup.store, provider: () => provider, holder: 'a' });
    setup.cp.resolveInput(runId, { callId: 'call_0_0', approved: true });
    return { ...setup, runId, provider };
  }

  it('a transcript changed while parked is a SnapshotMismatch; the record is unchanged', async () => {
    const { cp, store, runId, provider } = await parkedTurn();
    const before = cp.turn(runId)!.record;
    const head = await store.head('acme', runId);
    await store.append('acme', runId, [
      {
        type: 'message',
        seq: head.lastSeq + 1,
        ts: new Date().toISOString(),
        runId,
        role: 'user',
        content: 'sneaked in',
      },
    ]);
    const [lease] = await cp.lease({ free: 1, holder: 'b' });
    const err = await runInterval(lease!, { controlPlane: cp, store, provider: () => provider }).catch(
      (e: unknown) => e,
    );
    expect(isAgentError(err) && err.code).toBe('record_refused');
    expect(isAgentError(err) && err.detail.recordCode).toBe('SnapshotMismatch');
    expect(cp.turn(runId)!.record).toEqual(before);
  });

  it('a process configured otherwise (another manifest) is a ManifestMismatch', async () => {
    const { cp, store, provider } = await parkedTurn();
    const [lease] = await cp.lease({ free: 1, holder: 'b' });
    const err = await runInterval(lease!, {
      controlPlane: cp,
      store,
      provider: () => provider,
      protocol: 'everdict-agent/transcript/2',
    }).catch((e: unknown) => e);
    expect(isAgentError(err) && err.detail.recordCode).toBe('ManifestMismatch');
  });

  it('a record naming another unit than the lease is an identity_mismatch', async () => {
    const { cp, store, runId, provider } = await parkedTurn();
    const [lease] = await cp.lease({ free: 1, holder: 'b' });
    const err = await runInterval(
      { ...lease!, unitId: 'a'.repeat(64) },
      { controlPlane: cp, store, provider: () => provider },
    ).catch((e: unknown) => e);
    expect(isAgentError(err) && err.code).toBe('identity_mismatch');
    expect(cp.turn(runId)!.status).toBe('running');
  });
});
