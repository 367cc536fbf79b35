#!/usr/bin/env node
// What canonical addressing costs a run: the three addresses the control plane derives from JSON values per
// inline run (unit_id, grants_id, the interval's journal root; src/ledger/records.ts `addressOf`) as BLAKE3 of
// run-model's canonicalJson (RFC 8785), against the baseline BLAKE3 of JSON.stringify (what it was before:
// not recomputable from a stored run), interleaved rounds in one process.
//   node apps/control-plane/bench/addresses.mjs
import { canonicalJson } from '@everdict/run-model';
import { blake3, bytesToHex } from '@everdict/runrecord';

const enc = new TextEncoder();
const unit = {
  unit: 'everdict.run/1',
  tenant: 'default',
  kind: 'analysis',
  subject: { config: { op: 'sum', values: [1, 2, 3], nested: { a: 1, b: 'x' } } },
};
const grants = {
  grants: 'everdict.grants/1',
  placement: { rung: 'inline', driver: null },
  attach: { channels: [] },
  envelope: { id: 'env_01', capUsd: 10 },
};
const fact = (i) => ({
  kind: 'run.status',
  runId: 'run_01',
  at: '2026-12-05T16:00:00.000Z',
  data: { from: 'queued', to: 'running', i },
});
const journal = { outputs: { summary: 'ok', result: { total: 6 } }, facts: [0, 1, 2, 3].map(fact) };
const values = [unit, grants, journal];
const N = Number(process.env.BENCH_N ?? 20_000);

function perRunUs(encode) {
  const once = () => {
    for (const v of values) bytesToHex(blake3(enc.encode(encode(v))));
  };
  for (let i = 0; i < 2_000; i++) once();
  const t = process.hrtime.bigint();
  for (let i = 0; i < N; i++) once();
  return Number(process.hrtime.bigint() - t) / 1e3 / N;
}

const rounds = [];
for (let r = 0; r < 5; r++) {
  const base = perRunUs(JSON.stringify);
  const canonical = perRunUs(canonicalJson);
  rounds.push({ base, canonical });
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const base = median(rounds.map((r) => r.base));
const canonical = median(rounds.map((r) => r.canonical));
console.log(
  `BENCH addresses.per_run canonical=${canonical.toFixed(1)} stringify=${base.toFixed(1)} ratio=${(canonical / base).toFixed(2)} extra=${(canonical - base).toFixed(1)} unit=µs(3 addresses a run) rounds=[${rounds.map((r) => (r.canonical / r.base).toFixed(2)).join(',')}]`,
);
