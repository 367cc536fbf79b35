// Headline figures for the hot paths a control plane calls per run: parsing a record at the boundary,
// one status transition, and the rollup of a large group. Prints one `BENCH {json}` line each.
import { createRun, Run, rollupStatus, transition } from '../dist/index.js';

const spec = {
  kind: 'eval',
  subject: { harness: { id: 'h_1', version: '1.0.0' }, caseId: 'case_1' },
  origin: { cause: 'member', actor: 'u_1' },
  placement: { where: 'runtime' },
};
const t0 = '2026-01-01T00:00:00.000Z';
const { run } = createRun(spec, { id: 'run_1', tenant: 't_1', createdBy: 'u_1', now: t0 });

function bench(name, n, fn) {
  for (let i = 0; i < Math.min(n, 1000); i++) fn(i);
  globalThis.gc?.();
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn(i);
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  console.log(`BENCH ${JSON.stringify({ name, n, ops_per_s: Math.round(n / seconds) })}`);
}

bench('run-model.Run.parse', 50_000, () => Run.parse(run));
bench('run-model.transition', 200_000, () => transition(run, { type: 'start' }, '2026-01-01T00:00:01.000Z'));
const statuses = Array.from({ length: 10_000 }, (_, i) => (i % 7 === 0 ? 'failed' : 'succeeded'));
bench('run-model.rollupStatus.10k', 500, () => rollupStatus(statuses));
