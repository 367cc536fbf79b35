#!/usr/bin/env node
// everdict-agent — the agent service's command line.
//   everdict-agent work --dir DIR --holder NAME [--script FILE] [--mode blocking]
//       one pass: lease the ready turns of the local control plane in DIR, run one interval of each, print
//       one JSON line per lease, exit (a parked turn leaves nothing resident: this process simply ends).
//       The model: --script FILE (scripted), else EVERDICT_MODEL_BASE_URL/EVERDICT_MODEL_API_KEY (OpenAI-compatible).
//   everdict-agent demo [--dir DIR]
//       the local demo: a turn asks for approval, parks, is approved, resumes, answers; prints the record's verdict.
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { costToJson, verifyWire } from '@everdict/runrecord';
import { localBackend, TrajectoryStore } from '@everdict/trajectory-store';
import { agentEnv } from './config.js';
import { AgentError, isAgentError } from './errors.js';
import { LocalControlPlane } from './local/local-control-plane.js';
import { workOnce } from './loop/worker.js';
import { OpenAiProvider } from './model/openai-provider.js';
import type { ModelProvider } from './model/provider.js';
import { scriptedProviderFromFile } from './model/script-file.js';
import { ScriptedProvider } from './model/scripted-provider.js';

function storeAt(dir: string): TrajectoryStore {
  return new TrajectoryStore({ backend: localBackend({ root: path.join(dir, 'trajectories') }) });
}

async function work(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      dir: { type: 'string' },
      holder: { type: 'string', default: `agent-${process.pid}` },
      script: { type: 'string' },
      mode: { type: 'string', default: 'non_blocking' },
    },
  });
  const env = agentEnv();
  const dir = values.dir ?? env.EVERDICT_DATA_DIR;
  if (values.mode !== 'non_blocking' && values.mode !== 'blocking')
    throw new AgentError('bad_request', '--mode is non_blocking or blocking');
  let provider: ModelProvider;
  if (values.script) provider = scriptedProviderFromFile(values.script);
  else if (env.EVERDICT_MODEL_BASE_URL)
    provider = new OpenAiProvider({
      baseURL: env.EVERDICT_MODEL_BASE_URL,
      apiKey: env.EVERDICT_MODEL_API_KEY ?? '',
    });
  else throw new AgentError('bad_request', 'no model: pass --script FILE or set EVERDICT_MODEL_BASE_URL');
  const store = storeAt(dir);
  const controlPlane = new LocalControlPlane({ dir, store });
  const outcomes = await workOnce({
    controlPlane,
    store,
    provider: () => provider,
    holder: values.holder,
    mode: values.mode,
    storageWattsPerGb: env.EVERDICT_STORAGE_W_PER_GB,
    agentWatts: env.EVERDICT_AGENT_WATTS,
  });
  for (const o of outcomes) process.stdout.write(`${JSON.stringify({ pid: process.pid, ...o })}\n`);
  await store.close();
}

async function demo(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { dir: { type: 'string' } } });
  const dir = values.dir ?? mkdtempSync(path.join(os.tmpdir(), 'everdict-agent-demo-'));
  const env = agentEnv();
  const store = storeAt(dir);
  const cp = new LocalControlPlane({ dir, store });
  await cp.configureTenant('demo', { budget: { usd: 10 } });
  await cp.putAgent('demo', {
    id: 'releaser',
    version: '1',
    name: 'releaser',
    model: 'scripted-demo',
    systemPrompt: 'You ship releases, and ask before you do.',
    tools: ['ask_approval', 'read_run'],
    envelope: { usd: 1, runs: 5 },
    pricing: { inputUsdPerMTok: 3, outputUsdPerMTok: 15 },
  });
  const provider = new ScriptedProvider([
    { toolCalls: [{ tool: 'ask_approval', args: { question: 'Ship 1.4.0 to production?' } }] },
    (m) => ({
      content: `Decision received: ${[...m].reverse().find((x) => x.role === 'tool')?.content ?? ''}. Shipping.`,
    }),
  ]);
  const options = {
    controlPlane: cp,
    store,
    provider: () => provider,
    holder: 'demo',
    storageWattsPerGb: env.EVERDICT_STORAGE_W_PER_GB,
    agentWatts: env.EVERDICT_AGENT_WATTS,
  };
  const { runId } = await cp.startTurn({
    tenant: 'demo',
    agentId: 'releaser',
    text: 'Release 1.4.0 please.',
  });
  const [first] = await workOnce(options);
  console.log('interval 1:', JSON.stringify(first));
  const callId = cp.turn(runId)!.outstanding[0]!;
  cp.resolveInput(runId, { callId, approved: true, note: 'go ahead', by: 'member:alice' });
  const [second] = await workOnce(options);
  console.log('interval 2:', JSON.stringify(second));
  const r = verifyWire(cp.turn(runId)!.record);
  if (!r.ok) throw new AgentError('record_refused', r.error);
  console.log(
    'record:',
    r.phase,
    'account',
    r.account.verdict,
    'cost µJ',
    JSON.stringify(costToJson(r.cost)),
  );
  console.log('state dir:', dir);
  await store.close();
}

async function main(): Promise<void> {
  const [command, ...rest] = process.argv.slice(2);
  if (command === 'work') return work(rest);
  if (command === 'demo') return demo(rest);
  process.stderr.write(
    'usage: everdict-agent work --dir DIR [--holder NAME] [--script FILE] [--mode blocking] | demo [--dir DIR]\n',
  );
  process.exitCode = 2;
}

main().catch((e: unknown) => {
  const err = isAgentError(e) ? e : new AgentError('bad_request', String(e));
  process.stderr.write(
    `${JSON.stringify({ error: err.code, status: err.httpStatus, message: err.message })}\n`,
  );
  process.exitCode = 1;
});
