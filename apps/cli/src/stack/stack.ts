// The main job: the control plane (PGlite in `<dataDir>`, or DATABASE_URL), its embedded runner
// (EVERDICT_EMBEDDED_RUNNER=1 unless EVERDICT_RUNNER=external) and the agent service (scripted model unless
// EVERDICT_MODEL_BASE_URL), with a seeded admin key and a generated internal token; waits for health,
// prints the console URL and the key; stop() (Ctrl-C) stops every part.
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { anySignal } from 'any-signal';
import { pause } from '../backoff.js';
import { makeDirectories } from '../directories.js';
import { defaultPaths, type PartPaths, passThrough } from './parts.js';
import { loadOrCreateSecrets, recordUrl } from './secrets.js';
import { type Part, startPart, stopParts } from './supervisor.js';

export interface StackOptions {
  readonly dataDir: string;
  readonly port: number;
  readonly host?: string;
  readonly env: NodeJS.ProcessEnv;
  readonly paths?: PartPaths;
  readonly healthTimeoutMs?: number;
  readonly onStatus?: (line: string) => void;
  /** Ctrl-C: a start still waiting for the control plane stops it and rejects at once. */
  readonly signal?: AbortSignal;
}

export interface Stack {
  readonly url: string;
  readonly apiKey: string;
  readonly internalToken: string;
  readonly parts: readonly Part[];
  /** What each part is backed by, for the banner. */
  readonly backing: Record<string, string>;
  /** Resolves when a part exits on its own (not through stop()). */
  readonly failed: Promise<{ part: string; code: number | string; tail: string }>;
  stop(): Promise<void>;
}

export class StackError extends Error {
  override readonly name = 'StackError';
}

function checkInterrupted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new StackError('interrupted while the control plane was starting');
}

async function waitHealthy(url: string, cp: Part, timeoutMs: number, signal?: AbortSignal): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  void cp.exited.then(() => {
    exited = true;
  });
  for (;;) {
    checkInterrupted(signal);
    if (exited) throw new StackError(`the control plane exited before it was healthy:\n${cp.tail()}`);
    try {
      // Each probe is bounded: a control plane that accepts the socket but never answers is not healthy,
      // and the deadline below is still reached.
      const left = AbortSignal.timeout(Math.max(100, Math.min(5_000, deadline - Date.now())));
      const both = anySignal([left, signal]);
      const res = await fetch(`${url}/healthz`, { signal: both }).finally(() => both.clear());
      if (res.ok) return;
    } catch {
      /* not listening yet, or no answer in time */
    }
    checkInterrupted(signal);
    if (Date.now() > deadline)
      throw new StackError(`the control plane was not healthy in time:\n${cp.tail()}`);
    await pause(200, signal);
  }
}

/**
 * The agent service's serve mode, as a PAIRED agent host: its Ed25519 key and pairing live in
 * `<dataDir>/host` (`--pair`: on first start, or when this control plane no longer lists it, it pairs with
 * a shared pairing token minted by the service token), so every interval it runs carries the attestation
 * it signed (GET /keys lists its key as `agent-host`). Without `EVERDICT_MODEL_BASE_URL` it runs the scripted model: a script
 * written into its data dir that asks a person for approval (the turn parks as a transcript) and then answers
 * with the approval it got.
 */
function agentArgs(agentMain: string, url: string, dataDir: string, env: NodeJS.ProcessEnv): string[] {
  const args = [
    agentMain,
    'serve',
    '--url',
    url,
    '--pair',
    '--state-dir',
    path.join(dataDir, 'host'),
    '--name',
    'everdict-start',
  ];
  if (env.EVERDICT_MODEL_BASE_URL) return args;
  const script = path.join(dataDir, 'agent-script.json');
  makeDirectories(dataDir);
  writeFileSync(
    script,
    JSON.stringify([
      { toolCalls: [{ tool: 'ask_approval', args: { question: 'May I ship this release?' } }] },
      { content: 'Approval answered: {{last_tool_result}}' },
    ]),
  );
  return [...args, '--script', script];
}

/**
 * Refuses a port something already listens on. Otherwise the health check below would be answered by that
 * other server (another main job, say): "healthy", a banner with a key it does not know, then a failure
 * that names the agent, not the port.
 */
async function checkPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const inUse = await new Promise<string | null>((resolve) => {
    const probe = net.createServer();
    probe.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    probe.listen(port, host, () => probe.close(() => resolve(null)));
  });
  if (inUse)
    throw new StackError(
      `port ${port} on ${host} is not free (${inUse}): is another \`everdict start\` running? Stop it, or pick another port with --port (0: any free port)`,
    );
}

export async function startStack(o: StackOptions): Promise<Stack> {
  const paths = o.paths ?? defaultPaths(o.env);
  const status = o.onStatus ?? (() => undefined);
  const host = o.host ?? '127.0.0.1';
  await checkPortFree(host, o.port);
  const secrets = loadOrCreateSecrets(o.dataDir, o.env);
  const logDir = path.join(o.dataDir, 'logs');
  const embeddedRunner = o.env.EVERDICT_RUNNER !== 'external';
  const base = passThrough(o.env);
  const backing: Record<string, string> = {
    ledger: o.env.DATABASE_URL ? 'PostgreSQL (DATABASE_URL)' : `PGlite in ${path.join(o.dataDir, 'pglite')}`,
    trajectories: o.env.EVERDICT_S3_BUCKET
      ? `S3 bucket ${o.env.EVERDICT_S3_BUCKET}`
      : `directory ${path.join(o.dataDir, 'trajectories')}`,
    execution: embeddedRunner
      ? 'embedded runner (process driver)'
      : 'external paired runner (EVERDICT_RUNNER=external)',
    'agent model': o.env.EVERDICT_MODEL_BASE_URL
      ? `OpenAI-compatible at ${o.env.EVERDICT_MODEL_BASE_URL}`
      : 'scripted',
  };

  const cp = startPart(
    'control-plane',
    process.execPath,
    [paths.controlPlane],
    {
      ...base,
      PORT: String(o.port),
      HOST: host,
      EVERDICT_DATA_DIR: o.dataDir,
      EVERDICT_BOOTSTRAP_API_KEY: secrets.apiKey,
      EVERDICT_INTERNAL_TOKEN: secrets.internalToken,
      EVERDICT_EMBEDDED_RUNNER: embeddedRunner ? '1' : '0',
      LOG_LEVEL: o.env.LOG_LEVEL ?? 'info',
    },
    logDir,
  );
  status(`control plane: starting (log ${cp.logFile})`);
  let url: string;
  try {
    const port = await listeningPort(cp, o.port, o.healthTimeoutMs ?? 240_000, o.signal);
    url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
    await waitHealthy(url, cp, o.healthTimeoutMs ?? 240_000, o.signal);
    recordUrl(o.dataDir, url);
  } catch (e) {
    // Not started: the control plane it spawned is stopped too, never left running without a main job.
    await stopParts([cp], 15_000);
    throw e;
  }
  status(`control plane: healthy at ${url}`);

  const parts: Part[] = [cp];
  const agent = startPart(
    'agent',
    process.execPath,
    agentArgs(paths.agent, url, path.join(o.dataDir, 'agent'), o.env),
    {
      ...base,
      EVERDICT_CONTROL_PLANE_URL: url,
      EVERDICT_INTERNAL_TOKEN: secrets.internalToken,
      EVERDICT_DATA_DIR: path.join(o.dataDir, 'agent'),
    },
    logDir,
  );
  // A build of everdict-agent without a serve mode answers usage (exit 2): that part is then reported as
  // not available and the rest keeps running. Any other exit of a part stops the main job.
  parts.unshift(agent);
  status(`agent service: starting (log ${agent.logFile})`);
  const optional = new Map<Part, (code: number | string) => boolean>([[agent, (code) => code === 2]]);
  let stopping = false;
  const failed = new Promise<{ part: string; code: number | string; tail: string }>((resolve) => {
    for (const p of parts)
      void p.exited.then((code) => {
        if (stopping) return;
        if (optional.get(p)?.(code)) {
          backing['agent model'] = 'none: this build of everdict-agent has no `serve` mode';
          status(
            `agent service: not available (everdict-agent serve exited ${code}: no serve mode in this build)`,
          );
          return;
        }
        resolve({ part: p.name, code, tail: p.tail() });
      });
  });
  return {
    url,
    apiKey: secrets.apiKey,
    internalToken: secrets.internalToken,
    parts,
    backing,
    failed,
    async stop() {
      stopping = true;
      // The agent first (it talks to the control plane), then the control plane (it drains, then exits).
      await stopParts(parts, 15_000);
    },
  };
}

/** The port the control plane says it listens on (PORT=0 picks one). */
async function listeningPort(
  cp: Part,
  asked: number,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<number> {
  if (asked !== 0) return asked;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    checkInterrupted(signal);
    const m = /"port":(\d+)[^\n]*"msg":"control plane listening"/.exec(cp.tail());
    if (m) return Number(m[1]);
    if (cp.child.exitCode !== null) throw new StackError(`the control plane exited:\n${cp.tail()}`);
    if (Date.now() > deadline)
      throw new StackError(`the control plane did not listen in time:\n${cp.tail()}`);
    await pause(100, signal);
  }
}
