// Admission + enqueue + dequeue decisions per second on the in-memory store, 10k tenants.
// One steady-state step = admit one run (gate + enqueue: 1 decision) + dequeue one run (WFQ + aging +
// quota: 1 decision), plus settling one earlier run to keep ~1k running (timed, not counted). The queue
// size stays constant, so every size does the same work per decision; the counters printed with each
// line (admitted / dispatched / refused per step, queued before and after) show it did.
// Fair measurement: each window's draws (ids, tenants, classes) are made before its clock starts; the
// request literal is built in the loop as any caller would (it dies young). The clock is virtual
// from a real epoch-ms value (1 ms per step, so nothing depends on how fast the machine is), the figure is the median of WINDOWS
// windows in wall time and in process CPU time (user + system, GC threads included).
// Regime: agingMs is far above any wait, so the headline is the class-priority WFQ path of a system that
// keeps up; at the largest size the clock then jumps past the aging bound and `admission.aged` measures
// the same store with every queued tenant promoted (the starvation guard's path).
// Prints `BENCH {json}` lines. Run: pnpm --filter @everdict/admission build && pnpm --filter @everdict/admission bench
// Env: BENCH_STEPS (steps per size, default 60k), BENCH_SIZES (comma list), BENCH_TRUSTED=0 (use `admit`).
import * as admission from '../dist/index.js';

const { admit, configureGlobal, configureTenant, dequeue, MemoryAdmissionStore, release } = admission;

const TENANTS = 10_000;
const SIZES = (process.env.BENCH_SIZES ?? '10000,100000,1000000').split(',').map(Number);
const STEPS = Number(process.env.BENCH_STEPS ?? 60_000);
const WINDOWS = 5;
const EPOCH_MS = 1_800_000_000_000; // a real epoch-ms clock: timestamps are heap numbers, as in production
const AGING_MS = 3_600_000; // 1 h virtual: far above the longest wait at 1M queued (~1M steps = 1000 s)
const CLASSES = ['interactive', 'background', 'batch'];
const CAUSES = { interactive: 'member', background: 'event', batch: 'schedule' };
const TRUSTED = process.env.BENCH_TRUSTED !== '0' && typeof admission.admitTrusted === 'function';
const gate = TRUSTED ? admission.admitTrusted : admit;
const tenantIds = Array.from({ length: TENANTS }, (_, t) => `t${t}`);

let seed = 42;
const rand = (n) => {
  // xorshift32: deterministic, full period, no float precision loss
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return (seed >>> 0) % n;
};
let n = 0;
/** The draws of `count` requests: ids (strings the store keeps anyway), tenant and class indices. */
function draws(count) {
  const ids = new Array(count);
  const tenants = new Uint16Array(count);
  const classes = new Uint8Array(count);
  for (let i = 0; i < count; i++) {
    classes[i] = rand(10) === 0 ? 0 : 1 + rand(2);
    ids[i] = `r${n++}`;
    tenants[i] = rand(TENANTS);
  }
  return { ids, tenants, classes };
}
/** Request i of `d`: the literal any caller builds, so it is built in the timed loop (it dies young). */
function request(d, i) {
  const cls = CLASSES[d.classes[i]];
  const runId = d.ids[i];
  return {
    requestId: runId,
    runId,
    tenant: tenantIds[d.tenants[i]],
    kind: 'eval',
    cause: CAUSES[cls],
    class: cls,
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function setup(queued) {
  const store = new MemoryAdmissionStore();
  await configureGlobal(store, { agingMs: AGING_MS });
  for (let t = 0; t < TENANTS; t++) {
    await configureTenant(store, tenantIds[t], {
      weight: 1 + (t % 4),
      maxQueued: 1_000,
      maxConcurrent: 20,
      inFlightCap: 2_000,
      budget: { usd: 1e9 },
    });
  }
  const state = { store, clock: EPOCH_MS, queued: 0, running: [], releasedAt: 0 };
  const t0 = performance.now();
  while (state.queued < queued) {
    const d = draws(1);
    const decision = await gate(store, request(d, 0), state.clock++);
    if (decision.outcome === 'admitted') state.queued++; // a full tenant refuses: draw another
  }
  return { state, fillS: (performance.now() - t0) / 1000 };
}

/** `steps` steady-state steps in WINDOWS windows; each window's requests are built before its clock starts. */
async function steady(state, steps) {
  const { store, running } = state;
  const per = Math.floor(steps / WINDOWS);
  const wall = [];
  const cpu = [];
  const shape = { admitted: 0, refused: 0, dispatched: 0, steps: 0, queuedBefore: state.queued };
  for (let w = 0; w < WINDOWS; w++) {
    const d = draws(per);
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < per; i++) {
      const now = state.clock++;
      const decision = await gate(store, request(d, i), now); // admitted or refused, it is a decision
      if (decision.outcome === 'admitted') shape.admitted++;
      else shape.refused++;
      for (const r of await dequeue(store, 1, now)) {
        running.push(r);
        shape.dispatched++;
      }
      if (running.length - state.releasedAt > 1_000) {
        const r = running[state.releasedAt];
        running[state.releasedAt++] = undefined;
        await release(
          store,
          { tenant: r.tenant, runId: r.runId, status: 'succeeded', actuals: { usd: 0.01 } },
          now,
        );
      }
    }
    const wallS = (performance.now() - t0) / 1000;
    const c = process.cpuUsage(c0);
    wall.push((2 * per) / wallS);
    cpu.push((2 * per) / ((c.user + c.system) / 1e6));
  }
  shape.steps = per * WINDOWS;
  state.queued += shape.admitted - shape.dispatched;
  return {
    decisions_per_s: Math.round(median(wall)),
    best_window_per_s: Math.round(Math.max(...wall)),
    ns_per_decision: Math.round(1e9 / median(wall)),
    cpu_decisions_per_s: Math.round(median(cpu)),
    cpu_ns_per_decision: Math.round(1e9 / median(cpu)),
    admitted_per_step: Number((shape.admitted / shape.steps).toFixed(3)),
    dispatched_per_step: Number((shape.dispatched / shape.steps).toFixed(3)),
    queued_before: shape.queuedBefore,
    queued_after: state.queued,
  };
}

const print = (line) => console.log(`BENCH ${JSON.stringify(line)}`);
const t0 = performance.now();
const curve = [];
for (const queued of SIZES) {
  globalThis.gc?.();
  const { state, fillS } = await setup(queued);
  await steady(state, 5_000); // warm-up
  globalThis.gc?.(); // collect the fill's garbage: measure the steady state, not the fill
  const r = await steady(state, STEPS);
  curve.push({ queued, ...r });
  print({ name: 'admission.growth', tenants: TENANTS, queued, ...r, fill_s: Number(fillS.toFixed(2)) });
  if (queued === SIZES[SIZES.length - 1]) {
    const heapMb = Math.round(process.memoryUsage().heapUsed / 2 ** 20);
    print({ name: 'admission.decide', tenants: TENANTS, queued, ...r, heap_mb: heapMb, trusted: TRUSTED });
    state.clock += AGING_MS + 1; // every queued run is now past the aging bound
    await steady(state, 5_000);
    print({ name: 'admission.aged', tenants: TENANTS, queued, ...(await steady(state, STEPS)) });
  }
}
const first = curve[0];
const last = curve[curve.length - 1];
print({
  name: 'admission.growth_ratio',
  from_queued: first.queued,
  to_queued: last.queued,
  cost_ratio: Number((last.ns_per_decision / first.ns_per_decision).toFixed(2)),
  cpu_cost_ratio: Number((last.cpu_ns_per_decision / first.cpu_ns_per_decision).toFixed(2)),
  log_ratio: Number((Math.log(last.queued) / Math.log(first.queued)).toFixed(2)),
  total_s: Math.round((performance.now() - t0) / 1000),
});
