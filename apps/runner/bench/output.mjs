#!/usr/bin/env node
// Benchmark `output.log`: a command in a real process-driver sandbox prints BENCH_MB (default 16) MB of lines of
// BENCH_LINE_BYTES (default 80, a log line; 2 is `yes`) bytes; its stdout is pumped into the run's trajectory
// through the runner's journal and HTTP transport to the built control plane (its embedded PGlite and local
// trajectory directory, as the main job runs it), under a real lease. `pumpOutput` (each event the whole lines a
// read brought, up to 16 KiB) against the runner's rule before it, one event per line (`perLine` below, as it
// was), in BENCH_ROUNDS (default 4) interleaved rounds in one process, the side that goes first alternating.
// Prints `BENCH output.log mb_per_s=… baseline=… ratio=…` (medians; ratio > 1: faster than an event per line).
//
// Needs the built runner, client and control plane (`pnpm --filter @everdict/runner... --filter
// @everdict/control-plane build`) and bubblewrap.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { startControlPlane } from '@everdict/client/testing';
import { ProcessDriver } from '@everdict/placement-process';
import { median } from '../../control-plane/bench/lib/measure.mjs';
import { Journal, pumpOutput, Tail } from '../dist/index.js';
import { leasedCommandRun } from './lib/leased-run.mjs';

const MB = Number(process.env.BENCH_MB ?? 16);
const LINE = Math.max(2, Number(process.env.BENCH_LINE_BYTES ?? 80));
const ROUNDS = Math.max(2, Number(process.env.BENCH_ROUNDS ?? 4));
const BYTES = MB * 1_000_000;

/** The runner's rule before: one log event per line (a line past 16 KiB cut into 4 Ki-character pieces). */
async function perLine(source, journal) {
  const decoder = new StringDecoder('utf8');
  const emit = (message) => journal.append({ type: 'log', level: 'info', stream: 'stdout', message });
  let carry = '';
  for await (const chunk of source) {
    carry += decoder.write(chunk);
    let nl = carry.indexOf('\n');
    while (nl >= 0) {
      await emit(carry.slice(0, nl));
      carry = carry.slice(nl + 1);
      nl = carry.indexOf('\n');
    }
    while (Buffer.byteLength(carry) > 16 * 1024) {
      await emit(carry.slice(0, 4096));
      carry = carry.slice(4096);
    }
  }
  carry += decoder.end();
  if (carry.length > 0) await emit(carry);
}

const dir = mkdtempSync(join(tmpdir(), 'bench-output-'));
chmodSync(dir, 0o711); // the sandbox user passes through it to the workspaces
const cp = await startControlPlane({});
const driver = new ProcessDriver({ stateDir: join(dir, 'state'), imagesDir: join(dir, 'images'), slots: 1 });
let stopHeartbeats = () => {};
let handle;
try {
  const leased = await leasedCommandRun(cp, join(dir, 'runner'));
  const { api, lease, runId } = leased;
  stopHeartbeats = leased.stop;
  handle = await driver.provision({ labels: { tenant: 'bench', runId, kind: 'command' } });

  // Every round appends to the same trajectory, its events numbered on from the last round's.
  let seq = lease.seqFrom ?? 0;
  const side = async (pump) => {
    const journal = await Journal.open(api, runId, lease.epoch, { seqFrom: seq });
    const line = `${'x'.repeat(LINE - 1)}\n`;
    const stream = await driver.stream(handle, ['sh', '-c', `yes '${line.slice(0, -1)}' | head -c ${BYTES}`]);
    stream.stdin.end();
    stream.stderr.resume();
    const t0 = performance.now();
    await Promise.all([pump(stream.stdout, journal), stream.exit]);
    await journal.close();
    const seconds = (performance.now() - t0) / 1000;
    seq += journal.count;
    return { mbPerS: MB / seconds, events: journal.count };
  };
  const ours = (source, journal) => pumpOutput(source, 'stdout', journal, new Tail());
  await side(ours); // warm-up: the connection, the server's code, the store's directories
  const now = [];
  const base = [];
  let events = { ours: 0, base: 0 };
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? ['ours', 'base'] : ['base', 'ours'];
    for (const which of order) {
      const r = await side(which === 'ours' ? ours : perLine);
      (which === 'ours' ? now : base).push(r.mbPerS);
      events = { ...events, [which]: r.events };
    }
  }
  const rounds = now.map((o, i) => Math.round((o / base[i]) * 100) / 100);
  const fmt = (n) => Math.round(n * 100) / 100;
  console.log(
    `BENCH output.log mb_per_s=${fmt(median(now))} baseline=${fmt(median(base))} ratio=${fmt(median(rounds))} rounds=[${rounds}] mb=${MB} line_bytes=${LINE} events=${events.ours} baseline_events=${events.base}`,
  );
} finally {
  stopHeartbeats();
  if (handle) await driver.dispose(handle).catch(() => {});
  await cp.stop();
  rmSync(dir, { recursive: true, force: true });
}
