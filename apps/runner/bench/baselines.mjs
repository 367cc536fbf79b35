// The runner bench's baselines, on the same machine: a raw loop of the process driver's `bwrap … true` sandboxes
// (before the control plane starts), and graphile-worker 0.17.3 running the same sandboxes as jobs (kept up beside
// the control plane and runner, measured in rounds interleaved with theirs).
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { sandboxArgs } from '@everdict/placement-process';
import { cpuMs, machinePer, pgCpuMs } from './cpu-meters.mjs';

// graphile-worker and pg are the control plane's (dev)dependencies: resolved from there, same versions.
const cpRequire = createRequire(new URL('../../control-plane/package.json', import.meta.url));
const graphile = await import(cpRequire.resolve('graphile-worker'));
const pg = cpRequire('pg');

/** The runner's slots, and the baselines' concurrency. */
export const SLOTS = 16;

/** N × `bwrap <the process driver's sandbox args> true`, `concurrency` at a time. */
function bwrapTrue(workspace) {
  const args = [...sandboxArgs({ kind: 'default' }, workspace, 'none'), '--chdir', '/workspace', 'true'];
  return new Promise((resolve, reject) => {
    const p = spawn(process.env.EVERDICT_BWRAP ?? 'bwrap', args, { stdio: 'ignore' });
    p.once('error', reject);
    p.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`bwrap exited ${code}`))));
  });
}

export async function pool(n, concurrency, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

export async function rawBwrap(n, workspace) {
  const t0 = performance.now();
  await pool(n, SLOTS, () => bwrapTrue(workspace));
  return n / ((performance.now() - t0) / 1000);
}

/**
 * graphile-worker running `bwrap … true` jobs, kept up across the bench's rounds (as our control plane and runner
 * are): `warm(n)` runs n jobs unmetered (its pools and prepared statements made, its code hot, as our side's
 * warm-up makes ours), `phase(n)` times and meters n jobs from the first one added, `stop()` ends it.
 */
export async function startGraphileBwrap(connectionString, database, workspace) {
  const quiet = new graphile.Logger(() => () => undefined);
  let done = 0;
  let target = 0;
  let finished = () => {};
  const runner = await graphile.run({
    connectionString,
    concurrency: SLOTS,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: quiet,
    taskList: {
      bwrap: async () => {
        await bwrapTrue(workspace);
        done += 1;
        if (done === target) finished();
      },
    },
  });
  const utils = await graphile.makeWorkerUtils({ connectionString, logger: quiet });
  // Its CPU per job, as `coreMsPerRun` counts ours: this process (the worker and the addJob calls; the sandboxes
  // are its reaped children, not counted here) and the PostgreSQL backends of its database.
  const meter = new pg.Client({ connectionString });
  await meter.connect();
  const sample = async () => ({ self: cpuMs(process.pid).self, pg: await pgCpuMs(meter, database) });
  /** Adds n jobs (16 callers) and resolves once all of them ran. */
  const jobs = async (n) => {
    target = done + n;
    const all = new Promise((r) => {
      finished = r;
    });
    await pool(n, SLOTS, () => utils.addJob('bwrap', {}));
    await all;
  };
  return {
    warm: (n) => (n > 0 ? jobs(n) : Promise.resolve()),
    async phase(n) {
      const a = await sample();
      const { result: perSec, msPerUnit: machineMs } = await machinePer(n, async () => {
        const t0 = performance.now();
        await jobs(n);
        return n / ((performance.now() - t0) / 1000);
      });
      const b = await sample();
      let pgMs = 0;
      for (const [pid, ms] of b.pg) pgMs += ms - (a.pg.get(pid) ?? 0);
      const per = (ms) => Math.round((ms / n) * 10) / 10;
      return { perSec, machineMs, coreMsPerJob: { worker: per(b.self - a.self), postgres: per(pgMs) } };
    },
    async stop() {
      await meter.end();
      await utils.release();
      await runner.stop();
    },
  };
}
