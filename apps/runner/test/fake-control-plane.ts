// A fake control plane for the daemon's tests (slots.test.ts, next-leases.test.ts): `RUNS` queued command
// leases, granted as asked (within a bound), every completion settled, everything counted. The daemon's
// RunnerApi port is all it implements; the real control plane's grants are tested in apps/control-plane.
import { randomBytes } from 'node:crypto';
import { bytesToHex } from '@everdict/runrecord';
import type { CompletionsReply, RunnerApi } from '../src/port.js';
import { Lease } from '../src/protocol.js';

const hex = () => bytesToHex(randomBytes(32));
export const leaseOf = (i: number, command = ['true']) =>
  Lease.parse({
    runId: `run-${i}-${randomBytes(3).toString('hex')}`,
    tenant: 'acme',
    kind: 'command',
    epoch: 1,
    attempt: 1,
    spec: { kind: 'command', subject: { command } },
    unitId: hex(),
    grantsId: hex(),
    recordHead: hex(),
    leaseMs: 30_000,
    heartbeatMs: 10_000,
  });

/** A promise and the function that resolves it. */
export function signal<T = void>(): { promise: Promise<T>; fire: (v: T) => void } {
  let fire: (v: T) => void = () => {};
  const promise = new Promise<T>((r) => {
    fire = r;
  });
  return { promise, fire };
}

/**
 * A control plane with `runs` queued runs, holding leases per runner up to `bound` (default: no bound): grants what it is asked
 * for — or, `overGrant`, that many more than asked (still within the bound) — settles every completion
 * (each batch waits for `gate()` first), and counts.
 */
export function fakeControlPlane(
  runs: number,
  bound = Number.POSITIVE_INFINITY,
  opts: { overGrant?: number } = {},
) {
  const queue = Array.from({ length: runs }, (_, i) => leaseOf(i));
  const held = new Set<string>();
  const seen = {
    leaseRequests: [] as number[],
    settled: 0,
    maxHeld: 0,
    completionsInFlight: 0,
    heartbeats: [] as string[][],
    /** Each completion batch's `next.free` (0: it asked for none). */
    asked: [] as number[],
  };
  let gate: () => Promise<void> = async () => {};
  const allSettled = signal();
  const grant = (free: number) => {
    const n = Math.min(free + (opts.overGrant ?? 0), bound - held.size);
    const out = queue.splice(0, Math.max(0, n));
    for (const l of out) held.add(l.runId);
    seen.maxHeld = Math.max(seen.maxHeld, held.size);
    return out;
  };
  const api: RunnerApi = {
    async leases(free, _waitMs, abort) {
      seen.leaseRequests.push(free);
      const out = grant(free);
      if (out.length > 0) return out;
      // The long-poll: nothing more comes; it waits until the runner stops asking.
      await new Promise<void>((r) => abort?.addEventListener('abort', () => r(), { once: true }));
      return [];
    },
    heartbeat: async (leases) => {
      seen.heartbeats.push(leases.map((l) => l.runId));
      return { lost: [], draining: false };
    },
    events: async () => undefined,
    artifact: async (_r, _e, path) => ({ path, address: `blake3:${'0'.repeat(64)}`, size: 0 }),
    complete: async () => undefined,
    async completeMany(items, next): Promise<CompletionsReply> {
      seen.completionsInFlight += 1;
      await gate();
      seen.completionsInFlight -= 1;
      for (const item of items) {
        if (!held.delete(item.runId)) throw new Error(`${item.runId} completed without its lease`);
        seen.settled += 1;
      }
      if (seen.settled === runs) allSettled.fire();
      seen.asked.push(next?.free ?? 0);
      return {
        results: items.map(() => ({ outcome: 'settled' as const })),
        ...(next ? { leases: grant(next.free) } : {}),
      };
    },
  };
  return {
    api,
    seen,
    queue,
    held,
    done: allSettled.promise,
    setGate: (g: () => Promise<void>) => {
      gate = g;
    },
  };
}
