#!/usr/bin/env node
// BENCH schedules.idle: what enabled schedules cost an idle control plane. An embedded core (PGlite, the main
// job's default) with the trigger loop on, in this process; S every-minute schedules (BENCH_SCHEDULES, 50),
// each fired once, then this process's CPU (`process.cpuUsage`) over BENCH_SECONDS (15) between two slots —
// against the same core with no schedule, in interleaved rounds in the same process (BENCH_ROUNDS pairs, 2; the
// medians printed). The core's clock is moved so that the measured window starts 5 s after a slot and ends
// before the next: it holds no firing, only ticks. BENCH_DIST: another build's dist directory (an A/B).
//   pnpm --filter @everdict/control-plane build && node apps/control-plane/bench/schedules-idle.mjs
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = path.resolve(
  process.env.BENCH_DIST ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist'),
);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const S = Number(process.env.BENCH_SCHEDULES ?? 50);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
const { startCore } = await import(path.join(dist, 'index.js'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** CPU ms a second of an idle core holding `n` fired every-minute schedules. */
async function idleCpu(n) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'everdict-schedules-'));
  const key = `evk_bench_${process.pid}_0123456789abcdef`;
  let offsetMs = 0;
  const core = await startCore({ dataDir, bootstrapKey: key, clock: () => new Date(Date.now() + offsetMs) });
  try {
    const who = await core.services.auth.authenticate(key);
    for (let i = 0; i < n; i++)
      await core.services.subscriptions.create(who, {
        name: `every minute ${i}`,
        schedule: { cron: '* * * * *' },
        runSpec: { kind: 'analysis', subject: { config: { fn: 'echo' } } },
      });
    // Past the schedules' first slot, 3 s into a minute: the loop's next tick fires them all.
    const at = Date.now() + 61_000;
    offsetMs = 61_000 + ((63_000 - (at % 60_000)) % 60_000);
    const fired = Date.now();
    while (n > 0) {
      const [slots] = await core.internals.deps.db
        .selectFrom('schedule_slots')
        .select((eb) => eb.fn.countAll().as('n'))
        .execute();
      if (Number(slots.n) >= n) break;
      if (Date.now() - fired > 30_000) throw new Error('the schedules did not fire');
      await sleep(100);
    }
    await sleep(2_000); // the fired runs settle; the window starts ≈ 5 s into the minute
    const before = process.cpuUsage();
    const t0 = performance.now();
    await sleep(SECONDS * 1000);
    const used = process.cpuUsage(before);
    return (used.user + used.system) / 1000 / ((performance.now() - t0) / 1000);
  } finally {
    await core.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (SECONDS >= 50) throw new Error('BENCH_SECONDS must leave the window inside one minute (< 50)');
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return (s[Math.floor((s.length - 1) / 2)] + s[Math.ceil((s.length - 1) / 2)]) / 2;
};
const none = [];
const some = [];
await idleCpu(0); // a warm-up core: the first one in the process pays the JIT's start
for (let i = 0; i < ROUNDS; i++) {
  // The side that goes first alternates.
  if (i % 2 === 0) none.push(await idleCpu(0));
  some.push(await idleCpu(S));
  if (i % 2 === 1) none.push(await idleCpu(0));
}
const r1 = (x) => x.toFixed(1);
console.log(
  `BENCH schedules.idle cpu_ms_per_s=${r1(median(some))} baseline_no_schedules=${r1(median(none))} ratio=${(median(some) / median(none)).toFixed(2)} rounds=[${some.map(r1)}] baseline_rounds=[${none.map(r1)}] schedules=${S} seconds=${SECONDS} dist=${dist}`,
);
process.exit(0);
