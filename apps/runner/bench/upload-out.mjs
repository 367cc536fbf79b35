#!/usr/bin/env node
// Benchmark `upload.out`: a run's out/ of BENCH_FILES (default 400) small files (1 KiB each) uploaded by
// `uploadOut` from a real process-driver sandbox to the built control plane (its embedded PGlite, as the main job
// runs it; BENCH_LEDGER=postgresql: a fresh database on the benches' PostgreSQL server, dropped after) over the
// runner's own HTTP transport, under a real lease — in batches (`artifacts:batch`, UPLOADS_IN_FLIGHT of them at
// once) against each file alone (UPLOADS_IN_FLIGHT at once: what the runner did before batches; BENCH_BASELINE=serial:
// one at a time, what it did before that), in BENCH_ROUNDS (default 6) interleaved rounds in one process, the side
// that goes first alternating.
// Prints `BENCH upload.out files_per_s=… baseline=… ratio=…` (medians; ratio > 1: faster than the baseline).
//
// Needs the built runner, client and control plane (`pnpm --filter @everdict/runner... --filter
// @everdict/control-plane build`) and bubblewrap.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startControlPlane } from '@everdict/client/testing';
import { ProcessDriver } from '@everdict/placement-process';
import { freshDatabase, median } from '../../control-plane/bench/lib/measure.mjs';
import { UPLOADS_IN_FLIGHT, uploadOut } from '../dist/index.js';
import { leasedCommandRun } from './lib/leased-run.mjs';

const FILES = Number(process.env.BENCH_FILES ?? 400);
const ROUNDS = Math.max(2, Number(process.env.BENCH_ROUNDS ?? 6));

const dir = mkdtempSync(join(tmpdir(), 'bench-upload-out-'));
chmodSync(dir, 0o711); // the sandbox user passes through it to the workspaces
// BENCH_LEDGER=postgresql: a fresh database on the benches' PostgreSQL server (EVERDICT_BENCH_DATABASE_URL, …).
const db =
  process.env.BENCH_LEDGER === 'postgresql' ? await freshDatabase(`bench_upload_${process.pid}`) : undefined;
const cp = await startControlPlane({ env: db ? { DATABASE_URL: db.url } : {} });
const driver = new ProcessDriver({ stateDir: join(dir, 'state'), imagesDir: join(dir, 'images'), slots: 1 });
let stopHeartbeats = () => {};
let handle;
try {
  const leased = await leasedCommandRun(cp, join(dir, 'runner'));
  const { api, lease, runId } = leased;
  stopHeartbeats = leased.stop;

  handle = await driver.provision({
    labels: { tenant: 'bench', runId, kind: 'command' },
    directories: ['out'],
  });
  const made = await driver.exec(handle, [
    'sh',
    '-c',
    `i=0; while [ $i -lt ${FILES} ]; do head -c 1024 /dev/urandom > out/f$i.bin; i=$((i+1)); done`,
  ]);
  if (made.exitCode !== 0) throw new Error('could not write out/');

  const noJournal = { append: async () => undefined };
  // The baseline's port: the same transport without the batch call, so each file goes alone.
  const alone = {
    leases: (...a) => api.leases(...a),
    heartbeat: (...a) => api.heartbeat(...a),
    events: (...a) => api.events(...a),
    artifact: (...a) => api.artifact(...a),
    complete: (...a) => api.complete(...a),
    completeMany: (...a) => api.completeMany(...a),
  };
  const serial = process.env.BENCH_BASELINE === 'serial';
  const side = async (batched) => {
    const t0 = performance.now();
    const { artifacts } = await uploadOut(
      {
        api: batched ? api : alone,
        driver,
        uploadsInFlight: batched || !serial ? UPLOADS_IN_FLIGHT : 1,
      },
      lease,
      handle,
      {},
      new AbortController().signal,
      noJournal,
    );
    if (artifacts.length !== FILES) throw new Error(`${artifacts.length} of ${FILES} uploaded`);
    return FILES / ((performance.now() - t0) / 1000);
  };
  await side(true); // warm-up: the connections, the server's code, the store's directories
  await side(false);
  const ours = [];
  const base = [];
  for (let round = 0; round < ROUNDS; round++) {
    if (round % 2 === 0) {
      ours.push(await side(true));
      base.push(await side(false));
    } else {
      base.push(await side(false));
      ours.push(await side(true));
    }
  }
  const rounds = ours.map((o, i) => Math.round((o / base[i]) * 100) / 100);
  console.log(
    `BENCH upload.out files_per_s=${Math.round(median(ours))} baseline=${Math.round(median(base))} ratio=${Math.round(median(rounds) * 100) / 100} rounds=[${rounds}] files=${FILES} in_flight=${UPLOADS_IN_FLIGHT} baseline_side=${serial ? 'serial' : 'alone'} ledger=${db ? 'postgresql' : 'pglite'}`,
  );
} finally {
  stopHeartbeats();
  if (handle) await driver.dispose(handle).catch(() => {});
  await cp.stop();
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
}
