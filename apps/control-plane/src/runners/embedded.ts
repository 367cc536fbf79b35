// The embedded runner of `pnpm start` (EVERDICT_EMBEDDED_RUNNER=1, the default): command and eval runs work
// on a fresh machine with no configuration. The control plane pairs a runner with itself — a shared pairing
// token minted internally (the operator's door), the runner's Ed25519 key made by the runner in
// `<dataDir>/runner/state` (mode 0600, it never leaves that directory) — and starts the built `everdict-runner`
// as a CHILD PROCESS on the process driver. A child, not an in-process loop: its compute dies with it, a
// `kill -9` of it is a real lost runner (its leases expire and requeue), and it speaks the same HTTP
// protocol as any other runner. It exits with its parent (`--exit-with-stdin`: the pipe closes when the
// control plane dies, even by kill -9); an unexpected exit is restarted with a backoff.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sign } from '@everdict/headlog';
import { bytesToHex, generateSigningKey, hexToBytes, type SigningKey } from '@everdict/runrecord';
import type { Executor } from '../db/tx.js';
import { pairingMessage } from './registry.js';

type Log = (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;

export interface EmbeddedRunnerOptions {
  /** The runner's state directory (key, pairing, sandboxes): `<dataDir>/runner`. */
  readonly stateDir: string;
  /** The built `everdict-runner` (default: the workspace's apps/runner/dist/cli.js beside this package). */
  readonly cli?: string;
  readonly slots: number;
  /** Mints a single-use shared pairing token (the runner service's operator door). */
  readonly mintToken: () => Promise<{ token: string }>;
  /** The runner service's pairing (POST /runners/pair, called in-process). */
  readonly pair: (input: {
    token: string;
    publicKey: string;
    /** The proof that the runner holds the key (registry.ts `pairingMessage`, signed). */
    signature: string;
    name: string;
    capabilities: ReturnType<typeof capabilitiesOf>;
  }) => Promise<{ runnerId: string; credential: string }>;
  /** The ledger: is a pairing still an active runner here? (A fresh database forgets old pairings.) */
  readonly ledger: Executor;
  readonly log: Log;
  /** Extra environment for the runner (tests). */
  readonly env?: Readonly<Record<string, string>>;
  /** How long a stop lets running intervals finish before the child is killed. */
  readonly graceMs?: number;
}

export interface EmbeddedRunner {
  readonly runnerId: string;
  /** Launches the child against the control plane's URL (loopback), once the server listens. */
  start(url: string): void;
  /** The running child's pid (changes when it is restarted). */
  pid(): number | undefined;
  /** SIGTERM (drain), wait up to the grace, then SIGKILL; no restart after. */
  stop(): Promise<void>;
}

/** apps/control-plane/dist/main.js → apps/runner/dist/cli.js (the workspace layout `pnpm start` builds). */
export function defaultRunnerCli(): string {
  return fileURLToPath(new URL('../../runner/dist/cli.js', import.meta.url));
}

const PAIRING_FILE = 'runner.json';
const KEY_FILE = 'signing.key';

/** The runner's state directory as `everdict-runner` reads it (apps/runner/src/state.ts). */
const stateOf = (stateDir: string) => path.join(stateDir, 'state');

function readPairing(stateDir: string): { runnerId?: string } | null {
  const file = path.join(stateOf(stateDir), PAIRING_FILE);
  if (!existsSync(file)) return null;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as { runnerId?: string };
  } catch {
    return null;
  }
}

/** The runner's key (64 hex of its 32-byte secret, mode 0600, made once), as `everdict-runner` keeps it. */
async function loadOrCreateKey(dir: string): Promise<SigningKey> {
  const file = path.join(dir, KEY_FILE);
  if (existsSync(file)) {
    const hex = readFileSync(file, 'utf8').trim();
    if (!/^[0-9a-f]{64}$/.test(hex)) throw new Error(`embedded runner: ${file} is not a 64-hex secret key`);
    return generateSigningKey(hexToBytes(hex));
  }
  const key = generateSigningKey(randomBytes(32));
  await writeFile(file, `${Buffer.from(key.secretKey).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  await chmod(file, 0o600);
  return key;
}

/**
 * A new key in place of one a runner of this ledger holds already (a pairing refuses a registered key, a revoked
 * runner's too: registry.ts `refuseRegisteredKey`): written beside it (0600), then renamed over it.
 */
async function replaceKey(dir: string): Promise<SigningKey> {
  const file = path.join(dir, KEY_FILE);
  const next = `${file}.next`;
  const key = generateSigningKey(randomBytes(32));
  await writeFile(next, `${Buffer.from(key.secretKey).toString('hex')}\n`, { mode: 0o600 });
  await chmod(next, 0o600);
  await rename(next, file);
  return key;
}

function pipeLogs(child: ChildProcess, log: Log): void {
  let rest = '';
  const onData = (chunk: Buffer) => {
    rest += chunk.toString('utf8');
    let nl = rest.indexOf('\n');
    while (nl >= 0) {
      const line = rest.slice(0, nl);
      rest = rest.slice(nl + 1);
      nl = rest.indexOf('\n');
      if (line.trim() === '') continue;
      try {
        const { level, msg, time: _t, ...fields } = JSON.parse(line) as Record<string, unknown>;
        const l = level === 'error' || level === 'warn' ? level : 'info';
        log(l, `embedded runner: ${String(msg)}`, fields);
      } catch {
        log('info', `embedded runner: ${line}`);
      }
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
}

/**
 * The process driver's capabilities, as `everdict-runner pair` declares them for `--driver process`: `sandbox`
 * too unless the runner opens no session channel (EVERDICT_RUNNER_SESSIONS=0 in its environment).
 */
const capabilitiesOf = (slots: number, sessions = true) => ({
  drivers: ['process'],
  kinds: sessions ? ['command', 'eval', 'sandbox'] : ['command', 'eval'],
  images: ['default'],
  slots,
});

/**
 * Pairs the embedded runner BEFORE the server listens (so a command run posted at once is placeable): the
 * runner's key under `<stateDir>/state` (0600), a shared pairing token minted and used in-process, the
 * pairing written where `everdict-runner start` reads it (0600). A pairing this ledger still knows as an
 * active runner is kept. Then `start(url)` launches the child once the server listens.
 */
export async function pairEmbeddedRunner(o: EmbeddedRunnerOptions): Promise<EmbeddedRunner> {
  const cli = o.cli ?? defaultRunnerCli();
  if (!existsSync(cli))
    throw new Error(
      `embedded runner: ${cli} is not built (pnpm start builds it; or EVERDICT_EMBEDDED_RUNNER=0)`,
    );
  // The sandbox user passes through to its workspaces under here; the key stays in a 0700 directory.
  await mkdir(o.stateDir, { recursive: true, mode: 0o711 });
  await chmod(o.stateDir, 0o711);
  const dir = stateOf(o.stateDir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  let key = await loadOrCreateKey(dir);

  let runnerId = readPairing(o.stateDir)?.runnerId;
  const active = runnerId
    ? await o.ledger
        .selectFrom('runners')
        .select('id')
        .where('id', '=', runnerId)
        .where('state', '=', 'active')
        .where('public_key', '=', key.publicKey)
        .executeTakeFirst()
    : undefined;
  if (!active) {
    // Its key belongs to a runner here already (drained or revoked, or its pairing file lost): a key pairs one
    // runner, ever, so the new pairing is made with a new key (the old runner's records still verify with the
    // old one, listed by GET /keys).
    // (An agent host's key counts too: a key names one identity, runner or agent host.)
    const held =
      (await o.ledger
        .selectFrom('runners')
        .select('id')
        .where('public_key', '=', key.publicKey)
        .executeTakeFirst()) ??
      (await o.ledger
        .selectFrom('agent_hosts')
        .select('id')
        .where('public_key', '=', key.publicKey)
        .executeTakeFirst());
    if (held) {
      key = await replaceKey(dir);
      o.log('info', 'embedded runner: its key is registered to a runner already; pairing with a new key', {
        runnerId: held.id,
      });
    }
    const { token } = await o.mintToken();
    const paired = await o.pair({
      token,
      publicKey: key.publicKey,
      // Pairs as any runner does: with its signature of the pairing message (proof that it holds the key).
      signature: bytesToHex(sign(pairingMessage(token, key.publicKey), key.secretKey)),
      name: 'embedded',
      capabilities: capabilitiesOf(
        o.slots,
        (o.env?.EVERDICT_RUNNER_SESSIONS ?? process.env.EVERDICT_RUNNER_SESSIONS) !== '0',
      ),
    });
    runnerId = paired.runnerId;
    const file = path.join(dir, PAIRING_FILE);
    const pairing = {
      // Rewritten at every start by `--url` (the port may change); a valid URL for the runner's parser.
      url: 'http://127.0.0.1/',
      runnerId: paired.runnerId,
      credential: paired.credential,
      publicKey: key.publicKey,
      name: 'embedded',
    };
    await writeFile(file, `${JSON.stringify(pairing, null, 2)}\n`, { mode: 0o600 });
    await chmod(file, 0o600);
  }
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    EVERDICT_PLACEMENT_DIR: process.env.EVERDICT_PLACEMENT_DIR ?? path.join(o.stateDir, 'placement'),
    ...(o.env ?? {}),
  };

  let child: ChildProcess | undefined;
  let stopping = false;
  let backoffMs = 500;
  let restart: NodeJS.Timeout | undefined;
  const graceMs = o.graceMs ?? 10_000;
  const launch = (url: string) => {
    if (stopping) return;
    const c = spawn(
      process.execPath,
      [
        cli,
        'start',
        '--state-dir',
        dir,
        '--url',
        url,
        '--slots',
        String(o.slots),
        '--grace-ms',
        String(graceMs),
        '--exit-with-stdin',
      ],
      { env, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    child = c;
    pipeLogs(c, o.log);
    const startedAt = Date.now();
    c.once('exit', (code, signal) => {
      if (stopping) return;
      // A runner that ran a while before dying starts again at once; one that keeps dying backs off.
      backoffMs = Date.now() - startedAt > 30_000 ? 500 : Math.min(backoffMs * 2, 30_000);
      o.log('warn', 'embedded runner exited; restarting', { code, signal, inMs: backoffMs });
      restart = setTimeout(() => launch(url), backoffMs);
      restart.unref();
    });
    o.log('info', 'embedded runner started', { runnerId, childPid: c.pid, slots: o.slots });
  };

  return {
    runnerId: runnerId as string,
    start: launch,
    pid: () => child?.pid,
    async stop() {
      stopping = true;
      clearTimeout(restart);
      const c = child;
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      const exited = new Promise<void>((r) => c.once('exit', () => r()));
      c.kill('SIGTERM');
      const timer = setTimeout(() => c.kill('SIGKILL'), graceMs + 2_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
