#!/usr/bin/env node
// The runner's own CPU per run: the built RunnerDaemon (its HttpRunnerApi, journal, energy, signed
// attestations, completion batches) of 16 slots against a minimal control plane in another process (leases,
// completions with next leases, heartbeats: answered at once, nothing verified) and an instant driver (no
// sandbox: an empty command, an `out/` with no file). What the runner process spends on a run besides its
// driver and the control plane's work — the part of `dispatch-runner.mjs`'s `coreMsPerRun.runner` that is
// the runner's own code, without that bench's noise (sandboxes, PostgreSQL, the machine's load).
//
//   node apps/runner/bench/runner-cpu.mjs [runner dist dir (default: this checkout's)] [runs (3000)]
// prints: BENCH runner.cpu {"runs", "userMsPerRun", "systemMsPerRun", "runsPerSec"} (process.cpuUsage of
// this process over the runs; the fake control plane's CPU is its own process's).
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { generateSigningKey } from '@everdict/runrecord';

if (process.argv[2] === '--control-plane') {
  const total = Number(process.argv[3]);
  let made = 0;
  let settled = 0;
  const hex = (c) => c.repeat(64);
  const lease = () => ({
    runId: `run_${String(made++).padStart(8, '0')}`,
    tenant: 't1',
    kind: 'command',
    epoch: 1,
    attempt: 0,
    spec: { kind: 'command', subject: { command: ['true'] } },
    unitId: hex('a'),
    grantsId: hex('b'),
    recordHead: hex('c'),
    leaseMs: 10_000,
    heartbeatMs: 2000,
    grants: { network: 'none' },
    seqFrom: 0,
  });
  const grant = (n) => {
    const out = [];
    while (out.length < n && made < total) out.push(lease());
    return out;
  };
  const server = createServer((req, res) => {
    const parts = [];
    req.on('data', (c) => parts.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(parts).toString() || '{}');
      let answer = {};
      if (req.url === '/runner/v1/leases') answer = { leases: grant(body.free) };
      else if (req.url === '/runner/v1/heartbeat') answer = { lost: [], draining: false };
      else if (req.url === '/runner/v1/completions') {
        settled += body.items.length;
        answer = {
          results: body.items.map((i) => ({ runId: i.runId, status: 200, outcome: 'settled' })),
          ...(body.next ? { leases: grant(body.next.free) } : {}),
        };
        if (settled >= total) process.send({ done: settled });
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer));
    });
  });
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
} else {
  const dist = process.argv[2] ?? fileURLToPath(new URL('../dist', import.meta.url));
  const runs = Number(process.argv[3] ?? 3000);
  const { RunnerDaemon, HttpRunnerApi, EnergyMeter } = await import(`${dist}/index.js`);
  const cp = fork(fileURLToPath(import.meta.url), ['--control-plane', String(runs)]);
  const { port } = await new Promise((r) => cp.once('message', r));
  const done = new Promise((r) => cp.on('message', (m) => m.done && r()));
  let n = 0;
  const driver = {
    async provision(spec) {
      return { id: `sb-${n++}`, driver: 'process', labels: spec.labels, createdAtMs: Date.now() };
    },
    async stream() {
      return {
        stdin: new Writable({ write: (_c, _e, cb) => cb() }),
        stdout: Readable.from([]),
        stderr: Readable.from([]),
        pty: false,
        resize: () => false,
        kill() {},
        exit: Promise.resolve({ exitCode: 0, signal: null }),
      };
    },
    async usage() {
      return { cpuTimeMs: 2, wallTimeMs: 3, mechanism: 'cgroup-v1' };
    },
    // A command that wrote no file: out/ holds nothing to upload.
    async *files() {},
    async dispose() {},
  };
  // The CLI's log: one JSON line per interval to stderr.
  const log = (level, msg, fields = {}) =>
    process.stderr.write(`${JSON.stringify({ level, time: new Date().toISOString(), msg, ...fields })}\n`);
  const daemon = new RunnerDaemon({
    api: new HttpRunnerApi(`http://127.0.0.1:${port}`, 'credential'),
    driver,
    key: generateSigningKey(randomBytes(32)),
    meter: () => new EnergyMeter('/nonexistent-powercap'),
    slots: 16,
    log,
  });
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  daemon.start();
  await done;
  const cpu = process.cpuUsage(c0);
  const seconds = (performance.now() - t0) / 1000;
  await daemon.drain(1000);
  cp.kill();
  const round = (x) => Math.round(x * 1000) / 1000;
  process.stdout.write(
    `BENCH runner.cpu ${JSON.stringify({
      runs,
      completed: daemon.ended.completed,
      userMsPerRun: round(cpu.user / 1000 / runs),
      systemMsPerRun: round(cpu.system / 1000 / runs),
      runsPerSec: Math.round(runs / seconds),
    })}\n`,
  );
  process.exit(0);
}
