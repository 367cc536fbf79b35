// Issue 16's proof, on a REAL control plane (the built dist, a child process, embedded PGlite): a turn whose
// tool call waits on an approval. The first agent process (a real child process talking HTTP) ends the
// interval; the control plane parks the turn as its transcript; the process EXITS. The approval arrives
// through POST /runs/:id/input; a second process, which shares nothing with the first, resumes from the
// transcript alone. The record — the control plane's — verifies `non_blocking`, with a nonzero idle energy
// estimated and labelled. The two processes are two PAIRED agent hosts (each its own Ed25519 key in its own
// state dir: one paired with `everdict-agent pair`, one with `work --pair`), and each interval carries the
// attestation its host signed: the record verifies offline (`everdict-runrecord verify --trust-key`) with
// their two keys and with nothing else, and an altered field fails. The variant that awaits the approval
// inside one interval (unpaired, in-process) verifies `blocking`.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { dataOf } from '@everdict/client';
import type { TraceEvent } from '@everdict/run-model';
import { decodeWire } from '@everdict/runrecord';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAgentError } from '../src/errors.js';
import { runInterval } from '../src/loop/interval.js';
import { workOnce } from '../src/loop/worker.js';
import { ScriptedProvider } from '../src/model/scripted-provider.js';
import { createAgent, message, recordOf, type Seat, seat } from './support.js';

const run = promisify(execFile);
const cli = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'cli.js');

const APPROVAL_SCRIPT = [
  { content: 'I will ask first.', toolCalls: [{ tool: 'ask_approval', args: { question: 'Ship 1.4.0?' } }] },
  { content: 'Answer was {{last_tool_result}} — shipping.' },
];

let s: Seat;
let script: string;
beforeAll(async () => {
  s = await seat();
  script = path.join(mkdtempSync(path.join(os.tmpdir(), 'everdict-agent-test-')), 'script.json');
  writeFileSync(script, JSON.stringify(APPROVAL_SCRIPT));
}, 300_000);
afterAll(async () => {
  await s?.stop();
});

const agentProcess = (stateDir: string, ...extra: string[]) =>
  run(process.execPath, [
    cli,
    'work',
    '--url',
    s.cp.url,
    '--token',
    s.cp.internalToken,
    '--state-dir',
    stateDir,
    '--script',
    script,
    '--wait-ms',
    '25000', // the most it takes; a long-poll answers as soon as the turn is ready (5 s ran out at load 30)
    ...extra,
  ]);
const stateDir = () => mkdtempSync(path.join(os.tmpdir(), 'everdict-agent-host-'));
const runrecordCli = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  '..',
  'node_modules',
  '@everdict',
  'runrecord',
  'dist',
  'cli.js',
);
/**
 * `everdict-runrecord verify --trust-key K…` on the wire JSON: its exit code and answer. Asynchronous: a
 * blocked event loop would let the control plane close an idle keep-alive socket under the client's feet.
 */
function verifyOffline(wire: unknown, keys: readonly string[]) {
  return new Promise<{ code: number | null; out: Record<string, unknown> }>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [runrecordCli, 'verify', ...keys.flatMap((k) => ['--trust-key', k])],
      {
        stdio: ['pipe', 'pipe', 'ignore'],
      },
    );
    let stdout = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.once('error', reject);
    child.once('close', (code) =>
      resolve({ code, out: JSON.parse(stdout.trim() || '{}') as Record<string, unknown> }),
    );
    child.stdin.end(JSON.stringify(wire));
  });
}

const getRun = async (id: string) => dataOf(await s.admin.GET('/runs/{id}', { params: { path: { id } } }));
const answer = (id: string, body: { callId: string; approved: boolean; note?: string }) =>
  s.admin.POST('/runs/{id}/input', { params: { path: { id } }, body });

async function trajectory(id: string): Promise<TraceEvent[]> {
  const page = dataOf(
    await s.admin.GET('/runs/{id}/trajectory', { params: { path: { id }, query: { limit: 1000 } } }),
  );
  return page.items as TraceEvent[];
}

describe('a turn waiting on an approval', () => {
  it('parks as a transcript, the first process exits, a second resumes from the transcript alone: non_blocking', async () => {
    expect(existsSync(cli), `build first: ${cli}`).toBe(true);
    const agentId = await createAgent(s, { tools: ['ask_approval', 'read_run'] });
    const runId = await message(s, agentId, 'Release 1.4.0.');

    // Host A pairs with a tenant admin's pairing token; host B pairs itself on start (`--pair`, a shared token).
    const dirA = stateDir();
    const dirB = stateDir();
    const { token } = dataOf(await s.admin.POST('/runners/pairing-tokens', { body: {} }));
    const pairedA = await run(process.execPath, [
      cli,
      'pair',
      s.cp.url,
      token,
      '--name',
      'host-a',
      '--state-dir',
      dirA,
    ]);
    const hostA = JSON.parse(pairedA.stdout.trim()) as { hostId: string; publicKey: string };
    expect(statSync(path.join(dirA, 'signing.key')).mode & 0o777).toBe(0o600);
    expect(readFileSync(path.join(dirA, 'signing.key'), 'utf8')).not.toContain(hostA.publicKey);

    const first = await agentProcess(dirA);
    const parked = JSON.parse(first.stdout.trim());
    expect(parked).toMatchObject({ result: 'parked', runId, outstanding: ['call_0_0'] });
    // The process is gone (execFile resolved on its exit, code 0); the turn shows awaiting_input, parked.
    expect((await getRun(runId)).status).toBe('awaiting_input');
    const atPark = await recordOf(s, runId);
    expect(atPark.verify).toMatchObject({ ok: true, phase: 'parked' });
    const suspended = decodeWire(atPark.wire).segments.at(-1)!;
    expect(suspended.kind === 'suspended' && suspended.snapshot).toEqual({ transcript: parked.transcript });
    // Nothing is ready until the person answers.
    expect(await s.agents.lease({ free: 1, holder: 'nobody' })).toEqual([]);

    expect(
      (await answer(runId, { callId: 'call_0_0', approved: true, note: 'ship it' })).response.status,
    ).toBe(200);
    const second = await agentProcess(dirB, '--pair', '--name', 'host-b');
    const done = JSON.parse(second.stdout.trim());
    expect(done.pid).not.toBe(parked.pid);
    expect(done).toMatchObject({ result: 'succeeded', runId });
    expect(done.summary).toBe('Answer was {"approved":true,"note":"ship it"} — shipping.');

    const settled = await getRun(runId);
    expect(settled.status).toBe('succeeded');
    expect(settled.usage).toMatchObject({ llmCalls: 2 });
    expect(settled.usage.costUsd ?? 0).toBeGreaterThan(0);
    const { wire, verify } = await recordOf(s, runId);
    expect(verify).toMatchObject({ ok: true, phase: 'closed', account: 'non_blocking' });
    expect(BigInt(verify.idleUj ?? '0')).toBeGreaterThan(0n);
    const segments = decodeWire(wire).segments;
    expect(segments.map((x) => x.kind)).toEqual(['executed', 'suspended', 'resumed', 'executed', 'closed']);
    // Who ran each interval: host A the first, host B the second — each signed by its own key, listed by GET /keys.
    const keys = dataOf(await s.admin.GET('/keys')).keys;
    const hostB = keys.find((k) => k.kind === 'agent-host' && k.name === 'host-b')!;
    expect(keys).toContainEqual({
      kind: 'agent-host',
      id: hostA.hostId,
      name: 'host-a',
      key: hostA.publicKey,
    });
    expect(verify.signedBy).toEqual([hostA.publicKey, hostB.key]);
    const cpKey = keys.find((k) => k.kind === 'control-plane')!.key;
    expect(await verifyOffline(wire, [hostA.publicKey, hostB.key])).toMatchObject({
      code: 0,
      out: { ok: true, phase: 'closed', account: 'non_blocking' },
    });
    expect(await verifyOffline(wire, [hostA.publicKey])).toMatchObject({
      code: 1,
      out: { ok: false, error: 'UntrustedAttestation', index: 3 },
    });
    expect(await verifyOffline(wire, [cpKey])).toMatchObject({
      code: 1,
      out: { error: 'UntrustedAttestation' },
    });
    const altered = structuredClone(wire) as { attestations: Record<string, Record<string, unknown>> };
    for (const body of Object.values(altered.attestations)) body.meter = 'rapl';
    expect(await verifyOffline(altered, [hostA.publicKey, hostB.key])).toMatchObject({
      code: 1,
      out: { ok: false, error: 'AttestationMismatch' },
    });
    const [exec1, , resumed, exec2] = segments;
    expect(exec1?.kind === 'executed' && exec1.account).toEqual({ dispatched: ['call_0_0'], resolved: [] });
    expect(exec2?.kind === 'executed' && exec2.account).toEqual({ dispatched: [], resolved: ['call_0_0'] });
    expect(resumed?.kind === 'resumed' && resumed.idleProvenance).toBe('estimated');
    expect(resumed?.kind === 'resumed' && resumed.snapshot).toEqual({ transcript: parked.transcript });

    // The transcript is the trajectory: the park's label, priced model calls, the approval's two events.
    const events = await trajectory(runId);
    const label = events.find((e) => e.type === 'extension' && e.ext === 'everdict/park');
    expect(label?.type === 'extension' && label.data).toMatchObject({
      transcript: parked.transcript,
      provenance: 'estimated',
      meter: 'storage-bytes-x-seconds-x-w-per-gb',
      wattsPerGb: 0.0012,
      idleUj: (resumed?.kind === 'resumed' ? resumed.idleUj : 0n).toString(),
    });
    expect((label?.type === 'extension' && (label.data as { bytes: number }).bytes) || 0).toBeGreaterThan(0);
    const llm = events.filter((e) => e.type === 'llm_call');
    expect(llm).toHaveLength(2);
    for (const e of llm) {
      expect(e.inputTokens).toBeGreaterThan(0);
      expect(e.costUsd).toBeGreaterThan(0);
    }
    const approvals = events.filter((e) => e.type === 'extension' && e.ext === 'approval');
    expect(approvals.map((e) => e.type === 'extension' && (e.data as { decision: string }).decision)).toEqual(
      ['requested', 'approved'],
    );
    // Two agent processes, a pairing and four offline verifications, each a Node start: at load 30 this took
    // over the 180 s it had. A safety net against hangs, not a speed limit.
  }, 900_000);

  it('the same turn awaited inside one interval verifies blocking', async () => {
    const agentId = await createAgent(s, { tools: ['ask_approval'] });
    const runId = await message(s, agentId, 'Release 1.4.0.');
    const provider = new ScriptedProvider(APPROVAL_SCRIPT);
    const working = workOnce(
      { controlPlane: s.agents, provider: () => provider, holder: 'h', mode: 'blocking' },
      25_000,
    );
    // The call exists once the interval dispatched it; answer it while the interval waits. Bounded by a
    // generous deadline, not by a count of tries (a loaded machine's interval takes seconds to get there).
    const deadline = Date.now() + 240_000;
    for (;;) {
      const r = await answer(runId, { callId: 'call_0_0', approved: false, note: 'not today' }).catch(
        (e: unknown) => e,
      );
      if (!(r instanceof Error)) break;
      if (Date.now() > deadline) throw r;
      await new Promise((res) => setTimeout(res, 25));
    }
    const [out] = await working;
    expect(out).toMatchObject({ result: 'succeeded' });
    const { wire, verify } = await recordOf(s, runId);
    expect(verify).toMatchObject({ ok: true, account: 'blocking' });
    expect(decodeWire(wire).segments.map((x) => x.kind)).toEqual(['executed', 'closed']);
  }, 600_000);
});

describe('resuming refuses what the park did not record', () => {
  async function parkedLease() {
    const agentId = await createAgent(s, { tools: ['ask_approval'] });
    const runId = await message(s, agentId, 'Release.');
    const provider = new ScriptedProvider(APPROVAL_SCRIPT);
    const [out] = await workOnce({ controlPlane: s.agents, provider: () => provider, holder: 'a' }, 5000);
    expect(out).toMatchObject({ result: 'parked', runId });
    await answer(runId, { callId: 'call_0_0', approved: true });
    // An earlier test's turn stays parked with its answer: once that test's lease expires (quickly on a
    // loaded machine) it is offered again too. Take leases until this turn's; the others stay held by 'b'.
    for (let i = 0; i < 10; i++) {
      const [lease] = await s.agents.lease({ free: 1, holder: 'b', waitMs: 5000 });
      if (lease?.runId === runId) return { runId, lease, provider };
    }
    throw new Error(`turn ${runId} was never leased`);
  }

  it('a process configured otherwise (another manifest) is a ManifestMismatch: it declines; the turn stays parked', async () => {
    const { runId, lease, provider } = await parkedLease();
    const out = await runInterval(lease, {
      controlPlane: s.agents,
      provider: () => provider,
      holder: 'b',
      protocol: 'everdict-agent/transcript/2',
    });
    // (an unpaired decliner: other holders may still come, so the turn is left ready for them — test/decline-lease.test.ts)
    expect(out).toEqual({ result: 'declined', runId, reason: 'manifest_mismatch', outcome: 'requeued' });
    expect((await getRun(runId)).status).toBe('awaiting_input');
    expect((await recordOf(s, runId)).verify.phase).toBe('parked');
  }, 120_000);

  it('a record naming another unit than the lease is an identity_mismatch; nothing is reported', async () => {
    const { runId, lease, provider } = await parkedLease();
    const err = await runInterval(
      { ...lease, unitId: 'a'.repeat(64) },
      { controlPlane: s.agents, provider: () => provider, holder: 'b' },
    ).catch((e: unknown) => e);
    expect(isAgentError(err) && err.code).toBe('identity_mismatch');
    expect((await getRun(runId)).status).toBe('awaiting_input');
  }, 120_000);
});
