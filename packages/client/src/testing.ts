// '@everdict/client/testing' — a real control plane for tests in this workspace: the built
// `apps/control-plane/dist/main.js` started as a child process on an ephemeral port with an embedded
// PGlite ledger in a fresh directory (or `DATABASE_URL`), a known admin key and service token. A fresh
// ledger starts as a copy of one migrated template (ledger-template.ts), not from initdb.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LEDGER_TEMPLATE_ENV, seedLedger } from './ledger-template.js';

export interface ControlPlaneProcess {
  readonly url: string;
  /** The bootstrap admin key of tenant `default`. */
  readonly apiKey: string;
  /** EVERDICT_INTERNAL_TOKEN (the service token). */
  readonly internalToken: string;
  readonly child: ChildProcess;
  /** What it has logged so far (pino JSON lines). */
  logs(): string;
  /** SIGTERM, wait for exit, remove its data directory. */
  stop(): Promise<void>;
}

export interface StartControlPlaneOptions {
  /** Default: the workspace's apps/control-plane/dist/main.js. */
  readonly mainPath?: string;
  readonly env?: Record<string, string>;
  /** Keep the ledger here (a restart on the same directory keeps its state); default a fresh temp dir. */
  readonly dataDir?: string;
  readonly startTimeoutMs?: number;
  /**
   * Keep the control plane's embedded runner (EVERDICT_EMBEDDED_RUNNER left at its default, on). Default
   * false: the helper sets EVERDICT_EMBEDDED_RUNNER=0 so tests choose their runners themselves.
   */
  readonly embeddedRunner?: boolean;
  /**
   * Let the control plane make its PGlite ledger itself (initdb and every migration) instead of starting
   * from a copy of the migrated template. Default false; EVERDICT_TEST_LEDGER_TEMPLATE=0 sets it for all.
   * A data directory that already holds a ledger (a restart) is never seeded.
   */
  readonly freshLedger?: boolean;
}

const DEFAULT_MAIN = fileURLToPath(new URL('../../../apps/control-plane/dist/main.js', import.meta.url));

export async function startControlPlane(
  options: StartControlPlaneOptions = {},
): Promise<ControlPlaneProcess> {
  const ownDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'everdict-cp-'));
  // The embedded runner's sandboxes live under the data directory: their user passes through it.
  if (options.embeddedRunner && ownDir) chmodSync(dataDir, 0o711);
  const mainPath = options.mainPath ?? DEFAULT_MAIN;
  const seed =
    !options.freshLedger &&
    process.env[LEDGER_TEMPLATE_ENV] !== '0' &&
    !options.env?.DATABASE_URL &&
    !existsSync(join(dataDir, 'pglite'));
  if (seed) await seedLedger(mainPath, dataDir, options.startTimeoutMs ?? 240_000);
  const apiKey = `evd_test_${randomBytes(16).toString('hex')}`;
  const internalToken = `internal-${randomBytes(16).toString('hex')}`;
  const child = spawn(process.execPath, [mainPath], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      PORT: '0',
      HOST: '127.0.0.1',
      EVERDICT_DATA_DIR: dataDir,
      EVERDICT_BOOTSTRAP_API_KEY: apiKey,
      EVERDICT_INTERNAL_TOKEN: internalToken,
      EVERDICT_SHUTDOWN_GRACE_MS: '2000',
      LOG_LEVEL: 'info',
      ...(options.embeddedRunner ? {} : { EVERDICT_EMBEDDED_RUNNER: '0' }),
      ...(options.env ?? {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    // A start that timed out leaves nothing running: the child is killed and reaped before the rejection (a caller
    // whose start rejected has no handle to stop it with).
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      child.kill('SIGKILL'); // its exit (below) rejects
    }, options.startTimeoutMs ?? 240_000);
    const onData = (chunk: Buffer) => {
      log += chunk.toString('utf8');
      const m = /"port":(\d+)[^\n]*"msg":"control plane listening"/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(`http://127.0.0.1:${m[1]}`);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      const why = late ? 'did not start in time (killed)' : `exited (${code}) before listening`;
      reject(new Error(`control plane ${why}:\n${log.slice(-4000)}`));
    });
  });
  // Keep draining its output so it never blocks on a full pipe.
  return {
    url,
    apiKey: options.env?.EVERDICT_BOOTSTRAP_API_KEY ?? apiKey,
    internalToken: options.env?.EVERDICT_INTERNAL_TOKEN ?? internalToken,
    child,
    logs: () => log,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
      if (ownDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
