#!/usr/bin/env node
// everdict-runner pair <url> <token> [--name N] [--slots N] [--driver process|kubernetes] [--state-dir D]
// everdict-runner start [--slots N] [--driver process|kubernetes] [--state-dir D] [--grace-ms N] [--url U]
//                       [--exit-with-stdin]
import { hostname } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pairingSignature } from '@everdict/client/host-identity';
import type { Driver } from '@everdict/placement';
import { AUDIT_HEAD_FILE, AuditChain } from './audit-chain.js';
import { leaseBound, RunnerDaemon } from './daemon.js';
import { DEFAULT_WATTS_PER_CORE, EnergyMeter } from './energy.js';
import { RunnerError } from './errors.js';
import { HttpRunnerApi, pairRunner } from './http-api.js';
import type { Capabilities } from './protocol.js';
import { SessionAgent } from './sessions/agent.js';
import { defaultStateDir, loadPairedKey, loadPairing, newKey, savePairedIdentity } from './state.js';

const USAGE = `usage:
  everdict-runner pair <url> <token> [--name NAME] [--slots N] [--driver process|kubernetes] [--state-dir DIR]
  everdict-runner start [--slots N] [--driver process|kubernetes] [--state-dir DIR] [--grace-ms N] [--url URL]
                        [--exit-with-stdin]`;

function log(level: 'info' | 'warn' | 'error', msg: string, fields: Record<string, unknown> = {}): void {
  process.stderr.write(`${JSON.stringify({ level, time: new Date().toISOString(), msg, ...fields })}\n`);
}

/**
 * Whether this runner holds session runs: `start` opens the session channel unless EVERDICT_RUNNER_SESSIONS=0.
 * `pair` reads the same variable: the control plane places a session only on a runner that registered the kind
 * `sandbox`, so a runner that serves sessions registers it.
 */
const servesSessions = (): boolean => process.env.EVERDICT_RUNNER_SESSIONS !== '0';

function capabilitiesOf(driver: 'process' | 'kubernetes', slots: number): Capabilities {
  return {
    drivers: [driver],
    kinds: servesSessions() ? ['command', 'eval', 'sandbox'] : ['command', 'eval'],
    images: driver === 'kubernetes' ? ['*'] : ['default'],
    slots,
  };
}

async function driverOf(kind: 'process' | 'kubernetes', slots: number): Promise<Driver> {
  // As many sandboxes as the runner holds leases: a settling interval's sandbox (its out/ read for artifacts,
  // then disposed) outlives its slot, whose next lease already provisions (daemon.ts, `leaseBound`).
  const sandboxes = leaseBound(slots);
  if (kind === 'kubernetes') {
    const { KubernetesDriver } = await import('@everdict/placement-kubernetes');
    // In a pod: the service account's in-cluster config (loadFromDefault finds it); elsewhere KUBECONFIG.
    return new KubernetesDriver({ maxSandboxes: sandboxes });
  }
  const { ProcessDriver } = await import('@everdict/placement-process');
  return new ProcessDriver({ slots: sandboxes });
}

/** A non-negative finite number (decimal), or a `usage` error naming where it came from. */
function numberOption(name: string, raw: string): number {
  const n = /^\d+(\.\d+)?$/.test(raw.trim()) ? Number(raw) : Number.NaN;
  if (!Number.isFinite(n)) throw new RunnerError('usage', `${name} is a non-negative number (got ${raw})`);
  return n;
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      slots: { type: 'string' },
      driver: { type: 'string' },
      'state-dir': { type: 'string' },
      'grace-ms': { type: 'string' },
      url: { type: 'string' },
      'exit-with-stdin': { type: 'boolean' },
    },
  });
  const [command, ...rest] = positionals;
  const stateDir = values['state-dir'] ?? defaultStateDir();
  const slots = Number(values.slots ?? process.env.EVERDICT_RUNNER_SLOTS ?? 4);
  const driverKind = (values.driver ?? process.env.EVERDICT_RUNNER_DRIVER ?? 'process') as
    | 'process'
    | 'kubernetes';
  if (!Number.isInteger(slots) || slots < 1) throw new RunnerError('usage', '--slots is a positive integer');
  if (driverKind !== 'process' && driverKind !== 'kubernetes')
    throw new RunnerError('usage', '--driver is process or kubernetes');

  if (command === 'pair') {
    const [url, token] = rest;
    if (!url || !token) throw new RunnerError('usage', USAGE);
    // A pairing is a new identity: a new key, whatever the directory holds (the control plane refuses a key
    // any runner holds, a revoked one's too). The directory changes only once the pairing is accepted — a
    // refused one leaves it as it was, its old pairing still usable if it was.
    const key = newKey();
    const name = values.name ?? hostname();
    const paired = await pairRunner(url, {
      token,
      publicKey: key.publicKey,
      // The proof that this runner holds the key it registers (everdict-runner-pair/1, bound to the token).
      signature: pairingSignature(key, token),
      name,
      capabilities: capabilitiesOf(driverKind, slots),
    });
    await savePairedIdentity(stateDir, key, {
      url,
      runnerId: paired.runnerId,
      credential: paired.credential,
      publicKey: key.publicKey,
      name,
    });
    process.stdout.write(`${JSON.stringify({ runnerId: paired.runnerId, publicKey: key.publicKey })}\n`);
    return 0;
  }
  if (command === 'start') {
    // Checked before anything starts: a watts figure that is not a number made every interval fail at its
    // end (its energy not a u64) — each run re-run until `executor_lost` — and a grace that is not one
    // killed every interval at the first SIGTERM.
    const watts = numberOption(
      'EVERDICT_WATTS_PER_CORE',
      process.env.EVERDICT_WATTS_PER_CORE ?? String(DEFAULT_WATTS_PER_CORE),
    );
    const graceMs = numberOption('--grace-ms', values['grace-ms'] ?? '60000');
    const pairing = await loadPairing(stateDir);
    // The key the pairing names, or `bad_state` before anything is contacted (never a key made here).
    const key = await loadPairedKey(stateDir, pairing);
    const powercapRoot = process.env.EVERDICT_POWERCAP_ROOT ?? '/sys/class/powercap';
    // --url: the control plane moved (an embedded runner's parent restarted on another port).
    const url = values.url ?? pairing.url;
    const driver = await driverOf(driverKind, slots);
    const daemon = new RunnerDaemon({
      api: new HttpRunnerApi(url, pairing.credential),
      driver,
      key,
      audit: new AuditChain(join(stateDir, AUDIT_HEAD_FILE)),
      meter: () => new EnergyMeter(powercapRoot, watts),
      slots,
      graceMs,
      ...(process.env.EVERDICT_RUNNER_LEASE_ON_FREE === 'poll' ? { leaseOnFree: 'poll' as const } : {}),
      log,
    });
    daemon.start();
    // Held-open sandboxes (session runs) over an outbound WebSocket, on the same driver (src/sessions/).
    const sessions = servesSessions()
      ? new SessionAgent({
          url,
          credential: pairing.credential,
          driver,
          images: capabilitiesOf(driverKind, slots).images,
          slots,
          log,
        })
      : null;
    sessions?.start();
    log('info', 'runner started', {
      runnerId: pairing.runnerId,
      url,
      slots,
      driver: driverKind,
    });
    await new Promise<void>((resolve) => {
      const stop = (signal: string) => {
        log('info', 'draining', { signal });
        void daemon
          .drain()
          .then(() => sessions?.stop())
          .then(resolve);
      };
      process.once('SIGTERM', () => stop('SIGTERM'));
      process.once('SIGINT', () => stop('SIGINT'));
      if (values['exit-with-stdin']) {
        // A child of its control plane (the embedded runner): when the parent dies, even by kill -9, the
        // pipe closes — the runner kills its compute at once (no grace) and exits: it never outlives it.
        process.stdin.resume();
        process.stdin.once('close', () => {
          log('warn', 'parent gone (stdin closed): killing running intervals and exiting');
          void daemon
            .drain(0)
            .then(() => sessions?.stop())
            .then(resolve);
        });
      }
    });
    log('info', 'runner stopped', { ended: daemon.ended });
    return 0;
  }
  throw new RunnerError('usage', USAGE);
}

// On a pipe stdout and stderr are asynchronous: exiting at once drops what the reader has not taken yet (the
// last log lines, a long listing). An empty write's callback runs once every write before it reached the OS.
async function exitFlushed(code: number): Promise<never> {
  await Promise.all([process.stdout, process.stderr].map((s) => new Promise((done) => s.write('', done))));
  process.exit(code);
}

main(process.argv.slice(2)).then(exitFlushed, (err: unknown) => {
  const code = err instanceof RunnerError ? err.code : ((err as { code?: string }).code ?? 'error');
  log('error', err instanceof Error ? err.message : String(err), { code });
  return exitFlushed(err instanceof RunnerError && err.code === 'usage' ? 64 : 1);
});
