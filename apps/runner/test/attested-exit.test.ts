// The attestation signs what the runner observed: the harness process's exit code as the driver reported it
// (what out/outputs.json says of the case is an output, not the interval's exit), and a signal's exit as that
// signal's. Real process-driver sandboxes; the control plane is a recording fake.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessDriver } from '@everdict/placement-process';
import { bytesToHex, decodeAttestationBody, generateSigningKey } from '@everdict/runrecord';
import { afterAll, describe, expect, it } from 'vitest';
import { commandEnd } from '../src/command-end.js';
import { EnergyMeter } from '../src/energy.js';
import { executeInterval } from '../src/interval.js';
import type { RunnerApi } from '../src/port.js';
import { type CompleteBody, Lease } from '../src/protocol.js';

const dir = mkdtempSync(join(tmpdir(), 'runner-attested-exit-'));
chmodSync(dir, 0o711); // the sandbox user passes through it to the workspaces
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const hex = () => bytesToHex(randomBytes(32));
const driver = new ProcessDriver({ stateDir: join(dir, 'state'), imagesDir: join(dir, 'images') });

/** Runs an eval interval whose harness is `sh -c script`; answers its completion and signed body. */
async function evalInterval(script: string, subject: Record<string, unknown> = {}) {
  const completed: CompleteBody[] = [];
  const api: RunnerApi = {
    leases: async () => [],
    heartbeat: async () => ({ lost: [], draining: false }),
    events: async () => undefined,
    artifact: async (_r, _e, path) => ({ path, address: `blake3:${'0'.repeat(64)}`, size: 0 }),
    complete: async () => undefined,
    completeMany: async (items) => {
      completed.push(...items);
      return { results: items.map(() => ({ outcome: 'settled' as const })) };
    },
  };
  const harness = { id: 'h', version: '1', image: 'default', command: ['sh', '-c', script] };
  const lease = Lease.parse({
    runId: `run-${randomBytes(4).toString('hex')}`,
    tenant: 'acme',
    kind: 'eval',
    epoch: 1,
    attempt: 1,
    spec: { kind: 'eval', subject: { harness: { id: 'h', version: '1' }, caseId: 'c1', ...subject } },
    unitId: hex(),
    grantsId: hex(),
    recordHead: hex(),
    leaseMs: 30_000,
    heartbeatMs: 10_000,
    harness,
  });
  const deps = {
    api,
    driver,
    key: generateSigningKey(randomBytes(32)),
    meter: () => new EnergyMeter(join(dir, 'no-powercap')),
  };
  expect(await executeInterval(lease, deps, new AbortController().signal)).toBe('completed');
  expect(completed).toHaveLength(1);
  const body = decodeAttestationBody(completed[0]!.attestation);
  return {
    runId: lease.runId,
    outputs: completed[0]!.outputs,
    usage: completed[0]!.usage,
    outcome: body.outcome,
    exitCode: body.exitCode,
  };
}

describe('the attested exit', () => {
  it('a harness that exits 3 after reporting exitCode 0: failed, exit 3 (its report is an output)', async () => {
    const r = await evalInterval(`echo '{"exitCode":0}' > out/outputs.json; exit 3`);
    expect(r).toMatchObject({ outcome: 'failed', exitCode: 3, outputs: { exitCode: 0 } });
  }, 120_000);

  it('a harness that exits 0 without out/outputs.json: failed, its exit 0 as observed (not a made-up 1)', async () => {
    const r = await evalInterval('exit 0');
    expect(r).toMatchObject({ outcome: 'failed', exitCode: 0, outputs: { exitCode: 1 } });
    expect(r.outputs.summary).toContain('out/outputs.json');
  }, 120_000);

  it('a harness that exits 0 reporting a failed case: failed, exit 0; a clean one succeeds', async () => {
    const failedCase = await evalInterval(`echo '{"exitCode":2}' > out/outputs.json`);
    expect(failedCase).toMatchObject({ outcome: 'failed', exitCode: 0, outputs: { exitCode: 2 } });
    const ok = await evalInterval(`echo '{"summary":"ok"}' > out/outputs.json`);
    expect(ok).toMatchObject({ outcome: 'succeeded', exitCode: 0, outputs: { exitCode: 0, summary: 'ok' } });
  }, 120_000);

  it("a harness's trace reports its model calls: the completion's usage is their fold, beside the CPU time", async () => {
    const trace = [
      '{"type":"message","role":"user","content":"2+2?"}',
      '{"type":"llm_call","model":"m","inputTokens":120,"outputTokens":30,"cacheReadTokens":7,"costUsd":0.25}',
      '{"type":"llm_call","model":"m","inputTokens":80,"outputTokens":12,"cacheWriteTokens":3,"costUsd":0.5}',
    ].join('\n');
    const r = await evalInterval(
      `echo '{"summary":"4"}' > out/outputs.json; printf '%s\n' '${trace}' > out/trace.jsonl`,
    );
    expect(r.outcome).toBe('succeeded');
    expect(r.usage).toMatchObject({
      inputTokens: 200,
      outputTokens: 42,
      cacheReadTokens: 7,
      cacheWriteTokens: 3,
      costUsd: 0.75,
      llmCalls: 2,
    });
    expect(r.usage?.cpuTimeMs).toBeGreaterThan(0);
    // No trace: the CPU time alone — no model calls claimed, not even zero of them.
    const untraced = await evalInterval(`echo '{"summary":"4"}' > out/outputs.json`);
    expect(Object.keys(untraced.usage ?? {})).toEqual(['cpuTimeMs']);
  }, 120_000);

  it("a harness's files that do not parse: failed, the summary naming the line, the field and why", async () => {
    const badTrace = await evalInterval(
      `echo '{"summary":"4"}' > out/outputs.json; printf '%s\n' '{"type":"message","role":"user","content":"2+2?"}' '{"type":"llm_call","model":"m","usage":{"inputTokens":1}}' > out/trace.jsonl`,
    );
    expect(badTrace).toMatchObject({ outcome: 'failed', exitCode: 0, outputs: { exitCode: 1 } });
    expect(badTrace.outputs.summary).toMatch(
      /^out\/trace\.jsonl line 2 is not a TraceEvent \(llm_call\): inputTokens: .*expected number.* \(and 2 more issues\)$/,
    );
    const badOutputs = await evalInterval(`echo '{"exitCode":"zero"}' > out/outputs.json`);
    expect(badOutputs.outputs.summary).toMatch(/^out\/outputs\.json: exitCode: /);
  }, 120_000);

  it('a harness file past the read cap: the interval completes failed, naming it (not a runner failure)', async () => {
    const r = await evalInterval(
      `echo '{"summary":"done"}' > out/outputs.json; head -c 17000000 /dev/zero | tr '\\0' a > out/trace.jsonl`,
    );
    expect(r).toMatchObject({ outcome: 'failed', exitCode: 0, outputs: { exitCode: 1 } });
    expect(r.outputs.summary).toBe('out/trace.jsonl is larger than 16 MiB');
  }, 120_000);

  it('the harness is given its case, never its answer key: case.json, the workspace and its environment lack it', async () => {
    const secret = 'answer-key-7f3a91';
    // The harness echoes case.json as its result, and counts the answer key in every file it can see in its
    // workspace and in its environment.
    const r = await evalInterval(
      `n=$( (grep -rl ${secret} . ; env | grep ${secret}) | wc -l); printf '{"summary":"%s","result":%s}' "$n" "$(cat case.json)" > out/outputs.json`,
      { caseSpec: { question: 'six times seven' }, expected: { answer: secret } },
    );
    expect(r.outcome).toBe('succeeded');
    expect(r.outputs.result).toEqual({
      runId: r.runId,
      caseId: 'c1',
      caseSpec: { question: 'six times seven' },
    });
    expect(r.outputs.summary).toBe('0');
  }, 120_000);

  it("a command a signal ended exits 128 + that signal's number", async () => {
    expect(await commandEnd(Promise.resolve({ exitCode: null, signal: 'SIGTERM' }))).toEqual({
      exitCode: 143,
    });
    expect(await commandEnd(Promise.resolve({ exitCode: null, signal: 'SIGKILL' }))).toEqual({
      exitCode: 137,
    });
    expect(await commandEnd(Promise.resolve({ exitCode: null, signal: null }))).toEqual({ exitCode: 137 });
  });
});
