#!/usr/bin/env node
// everdict-agent — the agent service's command line.
//   everdict-agent pair <url> <token> [--name NAME] [--state-dir DIR]
//       pair this host: its Ed25519 key (made on first use, `signing.key` mode 0600 in the state dir —
//       EVERDICT_AGENT_DIR, default ~/.everdict-agent) registered with a pairing token; prints the host id.
//   everdict-agent work  [--url URL] [--token T] [--holder NAME] [--script FILE] [--mode blocking] [--wait-ms N]
//                        [--state-dir DIR] [--pair] [--name NAME]
//       one pass: lease the ready turns of the control plane, run one interval of each, print one JSON line
//       per lease (a failed interval too: {"result":"error"}, and exit 1), exit (a parked turn leaves
//       nothing resident: this process simply ends).
//   everdict-agent serve [same options]
//       the service: lease, work, repeat until SIGTERM/SIGINT.
// Paired (a pairing in the state dir the control plane lists, or `--pair`: pair now with a shared token
// minted by the service token), the host id is the lease holder and every interval it ends is reported with
// the attestation this host signed. Unpaired, `--holder` names it and the control plane seals its intervals
// with its own key (the record's `signedBy` says so).
// URL/token default to EVERDICT_URL / EVERDICT_INTERNAL_TOKEN. The model: --script FILE (scripted), else
// EVERDICT_MODEL_BASE_URL / EVERDICT_MODEL_API_KEY (OpenAI-compatible).
import { parseArgs } from 'node:util';
import { agentEnv } from './config.js';
import { AgentError, isAgentError } from './errors.js';
import { defaultStateDir } from './host/host-key.js';
import { hostIdentity, pairHost } from './host/pairing.js';
import { HttpControlPlane } from './http/http-control-plane.js';
import { type LeaseReport, serve, workEach } from './loop/worker.js';
import { OpenAiProvider } from './model/openai-provider.js';
import type { ModelProvider } from './model/provider.js';
import { scriptedProviderFromFile } from './model/script-file.js';

async function options(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      url: { type: 'string' },
      token: { type: 'string' },
      holder: { type: 'string', default: `agent-${process.pid}` },
      script: { type: 'string' },
      mode: { type: 'string', default: 'non_blocking' },
      'wait-ms': { type: 'string', default: '0' },
      'state-dir': { type: 'string' },
      pair: { type: 'boolean', default: false },
      name: { type: 'string' },
    },
  });
  const env = agentEnv();
  const url = values.url ?? env.EVERDICT_URL;
  const token = values.token ?? env.EVERDICT_INTERNAL_TOKEN;
  if (!url || !token)
    throw new AgentError('bad_request', 'pass --url and --token (or EVERDICT_URL, EVERDICT_INTERNAL_TOKEN)');
  if (values.mode !== 'non_blocking' && values.mode !== 'blocking')
    throw new AgentError('bad_request', '--mode is non_blocking or blocking');
  const waitMs = Number(values['wait-ms']);
  if (!Number.isInteger(waitMs) || waitMs < 0 || waitMs > 25_000)
    throw new AgentError('bad_request', '--wait-ms is 0…25000');
  let provider: ModelProvider;
  if (values.script) provider = scriptedProviderFromFile(values.script);
  else if (env.EVERDICT_MODEL_BASE_URL)
    provider = new OpenAiProvider({
      baseURL: env.EVERDICT_MODEL_BASE_URL,
      apiKey: env.EVERDICT_MODEL_API_KEY ?? '',
    });
  else throw new AgentError('bad_request', 'no model: pass --script FILE or set EVERDICT_MODEL_BASE_URL');
  const host = await hostIdentity({
    url,
    dir: values['state-dir'] ?? defaultStateDir(),
    name: values.name ?? `agent-host-${process.pid}`,
    autoPair: values.pair ? { serviceToken: token } : undefined,
  });
  if (!host)
    process.stderr.write(
      `${JSON.stringify({ unpaired: true, holder: values.holder, note: "no agent-host pairing: the control plane signs this holder's intervals with its own key" })}\n`,
    );
  return {
    worker: {
      controlPlane: new HttpControlPlane({ url, token }),
      provider: () => provider,
      holder: host?.hostId ?? values.holder,
      mode: values.mode,
      ...(host ? { signer: host.signer } : {}),
    } as const,
    waitMs,
  };
}

const print = (o: LeaseReport) => process.stdout.write(`${JSON.stringify({ pid: process.pid, ...o })}\n`);

async function main(): Promise<void> {
  const [command, ...rest] = process.argv.slice(2);
  if (command === 'pair') {
    const { values, positionals } = parseArgs({
      args: rest,
      allowPositionals: true,
      options: { name: { type: 'string' }, 'state-dir': { type: 'string' } },
    });
    const [url, token] = positionals;
    if (!url || !token) throw new AgentError('bad_request', 'usage: everdict-agent pair <url> <token>');
    const p = await pairHost({
      url,
      token,
      name: values.name ?? `agent-host-${process.pid}`,
      dir: values['state-dir'] ?? defaultStateDir(),
    });
    process.stdout.write(`${JSON.stringify({ hostId: p.hostId, publicKey: p.publicKey })}\n`);
    return;
  }
  if (command === 'work') {
    const { worker, waitMs } = await options(rest);
    // Every lease of the pass is printed, a failed one too ({"result":"error"}); any failure: exit 1.
    const reports = await workEach(worker, waitMs);
    for (const o of reports) print(o);
    if (reports.some((o) => o.result === 'error')) process.exitCode = 1;
    return;
  }
  if (command === 'serve') {
    const { worker } = await options(rest);
    const stop = new AbortController();
    process.once('SIGTERM', () => stop.abort());
    process.once('SIGINT', () => stop.abort());
    const onError = (err: unknown) =>
      process.stderr.write(
        `${JSON.stringify({ pid: process.pid, warn: 'agent service: retrying', err: String(err) })}\n`,
      );
    await serve({ ...worker, signal: stop.signal, onError }, print);
    return;
  }
  process.stderr.write(
    'usage: everdict-agent pair <url> <token> [--name N] [--state-dir D]\n       everdict-agent work|serve [--url URL] [--token T] [--holder NAME] [--script FILE] [--mode blocking] [--wait-ms N] [--state-dir D] [--pair] [--name N]\n',
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
