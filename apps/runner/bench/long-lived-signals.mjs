#!/usr/bin/env node
// What a call to the control plane leaves behind on the daemon's long-lived signal: the built
// `withRequestTimeout` (each call's signal joined to the caller's by `anySignal`, cleared when the call ends)
// against the same call made with `AbortSignal.any` (what it did before), in one process, N calls each
// under one never-aborted signal, the heap measured after a full GC. On Node 20 `AbortSignal.any` keeps every
// signal it joined to a source for as long as that source lives (nodejs/node#55351): the daemon's stop
// signal lives as long as the daemon, and every heartbeat, lease poll, event batch and completion is a call.
// Each call's request timeout is short here (TIMEOUT_MS) and waited out before the heap is read: a pending
// timeout holds its timer either way, until it fires; what is left after is what the calls leaked.
//
//   node apps/runner/bench/long-lived-signals.mjs [calls (100000)]
// prints: BENCH runner.signals {"calls", "retainedBytesPerCall": {"abortSignalAny", "anySignal"}, "ratio"}
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { withRequestTimeout } from '../dist/index.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');
const calls = Number(process.argv[2] ?? 100_000);
const TIMEOUT_MS = 200;

const answering = { heartbeat: () => Promise.resolve({ lost: [], draining: false }) };

/** The call as it was: the timeout joined to the caller's signal by `AbortSignal.any`. */
function withAbortSignalAny(api, ms) {
  return {
    heartbeat(leases, outer) {
      // biome-ignore lint/plugin: the leaking join is this bench's baseline (tooling/biome/no-abort-signal-any.grit)
      const signal = AbortSignal.any([AbortSignal.timeout(ms), outer]);
      return new Promise((resolve, reject) => {
        const stop = () => reject(new Error('aborted'));
        signal.addEventListener('abort', stop, { once: true });
        api.heartbeat(leases, signal).then((v) => {
          signal.removeEventListener('abort', stop);
          resolve(v);
        }, reject);
      });
    },
  };
}

/** The heap after full GCs, each after the event loop turned (weak references are cleared between jobs). */
const heap = async () => {
  for (let i = 0; i < 3; i++) {
    await new Promise((r) => setTimeout(r, 10));
    gc();
  }
  return process.memoryUsage().heapUsed;
};

/** Bytes still held after `calls` calls under one long-lived signal, per call. */
async function retained(api) {
  const daemon = new AbortController();
  const before = await heap();
  for (let i = 0; i < calls; i++) await api.heartbeat([], daemon.signal);
  await new Promise((r) => setTimeout(r, TIMEOUT_MS * 2)); // every call's timeout has fired
  const after = await heap();
  daemon.abort(); // releases whatever it held, before the next side is measured
  await heap();
  return (after - before) / calls;
}

// Warm both paths (their code, not their leftovers), then measure each side twice, interleaved.
await retained(withAbortSignalAny(answering, TIMEOUT_MS));
await retained(withRequestTimeout(answering, TIMEOUT_MS));
const any = [];
const ours = [];
for (let round = 0; round < 2; round++) {
  any.push(await retained(withAbortSignalAny(answering, TIMEOUT_MS)));
  ours.push(await retained(withRequestTimeout(answering, TIMEOUT_MS)));
}
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const r1 = (x) => Math.round(x * 10) / 10;
console.log(
  `BENCH runner.signals ${JSON.stringify({
    calls,
    retainedBytesPerCall: { abortSignalAny: r1(mean(any)), anySignal: r1(mean(ours)) },
    rounds: { abortSignalAny: any.map(r1), anySignal: ours.map(r1) },
  })}`,
);
