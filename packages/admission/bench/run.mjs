// Admission + enqueue + dequeue decisions per second on the in-memory store, 10k tenants.
// One steady-state step = admit one run (gate + enqueue) + dequeue one run (WFQ + aging + quota) =
// 2 decisions, plus settling one earlier run to keep ~1k running. Growth curve at 10k / 100k / 1M queued.
// Prints `BENCH {json}` lines. Run: pnpm --filter @everdict/admission build && pnpm --filter @everdict/admission bench
import {
  admit,
  configureGlobal,
  configureTenant,
  dequeue,
  MemoryAdmissionStore,
  release,
} from '../dist/index.js';

const TENANTS = 10_000;
const SIZES = [10_000, 100_000, 1_000_000];
const STEPS = Number(process.env.BENCH_STEPS ?? 100_000);
const CLASSES = ['interactive', 'background', 'batch'];
const CAUSES = { interactive: 'member', background: 'event', batch: 'schedule' };

let seed = 42;
const rand = (n) => {
  // xorshift32: deterministic, full period, no float precision loss
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return (seed >>> 0) % n;
};

async function setup(queued) {
  const store = new MemoryAdmissionStore();
  await configureGlobal(store, { agingMs: 2_000 });
  for (let t = 0; t < TENANTS; t++) {
    await configureTenant(store, `t${t}`, {
      weight: 1 + (t % 4),
      maxQueued: 1_000,
      maxConcurrent: 20,
      inFlightCap: 2_000,
      budget: { usd: 1e9 },
    });
  }
  let n = 0;
  const request = () => {
    const cls = CLASSES[rand(10) === 0 ? 0 : 1 + rand(2)];
    const runId = `r${n++}`;
    return {
      requestId: runId,
      runId,
      tenant: `t${rand(TENANTS)}`,
      kind: 'eval',
      cause: CAUSES[cls],
      class: cls,
    };
  };
  const t0 = performance.now();
  let refused = 0;
  for (let i = 0; i < queued; i++) {
    const d = await admit(store, request(), performance.now());
    if (d.outcome !== 'admitted' && ++refused < queued) i--; // a full tenant: draw another
  }
  return { store, request, fillS: (performance.now() - t0) / 1000 };
}

/** Steady state in WINDOWS windows; the median window is the figure, the best one shows the noise. */
const WINDOWS = 5;
async function steady(store, request, steps) {
  const running = [];
  let releasedAt = 0;
  const rates = [];
  for (let w = 0; w < WINDOWS; w++) {
    let decisions = 0;
    const t0 = performance.now();
    for (let i = 0; i < steps / WINDOWS; i++) {
      const now = performance.now();
      await admit(store, request(), now); // admitted or refused, it is a decision
      decisions++;
      for (const r of await dequeue(store, 1, now)) running.push(r);
      decisions++;
      if (running.length - releasedAt > 1_000) {
        const r = running[releasedAt++];
        await release(
          store,
          { tenant: r.tenant, runId: r.runId, status: 'succeeded', actuals: { usd: 0.01 } },
          now,
        );
      }
    }
    rates.push(decisions / ((performance.now() - t0) / 1000));
  }
  rates.sort((a, b) => a - b);
  const median = rates[Math.floor(WINDOWS / 2)];
  return {
    decisionsPerS: Math.round(median),
    best: Math.round(rates[WINDOWS - 1]),
    nsPerDecision: Math.round(1e9 / median),
  };
}

const t0 = performance.now();
const curve = [];
for (const queued of SIZES) {
  globalThis.gc?.();
  const { store, request, fillS } = await setup(queued);
  await steady(store, request, 5_000); // warm-up
  globalThis.gc?.(); // collect the fill's garbage: measure the steady state, not the fill
  const r = await steady(store, request, STEPS);
  curve.push({ queued, ...r });
  const line = {
    name: 'admission.growth',
    tenants: TENANTS,
    queued,
    decisions_per_s: r.decisionsPerS,
    best_window_per_s: r.best,
    ns_per_decision: r.nsPerDecision,
    fill_s: Number(fillS.toFixed(2)),
  };
  console.log(`BENCH ${JSON.stringify(line)}`);
  if (queued === 1_000_000) {
    const head = {
      name: 'admission.decide',
      tenants: TENANTS,
      queued,
      decisions_per_s: r.decisionsPerS,
      best_window_per_s: r.best,
      ns_per_decision: r.nsPerDecision,
      heap_mb: Math.round(process.memoryUsage().heapUsed / 2 ** 20),
    };
    console.log(`BENCH ${JSON.stringify(head)}`);
  }
}
const first = curve[0];
const last = curve[curve.length - 1];
const ratio = last.nsPerDecision / first.nsPerDecision;
console.log(
  `BENCH ${JSON.stringify({ name: 'admission.growth_ratio', from_queued: first.queued, to_queued: last.queued, cost_ratio: Number(ratio.toFixed(2)), log_ratio: Number((Math.log(last.queued) / Math.log(first.queued)).toFixed(2)), total_s: Math.round((performance.now() - t0) / 1000) })}`,
);
