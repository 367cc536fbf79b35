// The runner service: what the runner routes call (admin side and the runner's own calls), with the
// long-poll of lease requests — woken in-process by anything that queues a run on this replica and by the
// dispatch channel's NOTIFY (creates and requeues on any replica), re-checked at most every poll interval.
import { RUNNERS_CHANNEL, RunnerCredentials } from '../auth/runner-credentials.js';
import { everyPoll, type FallbackPoll } from '../db/fallback-poll.js';
import type { Db } from '../db/tx.js';
import { ControlPlaneError } from '../errors.js';
import type { PublicKeyEntry } from '../keys/registry.js';
import type { LeasePolicy } from '../leases/policy.js';
import type { RunView } from '../ledger/views.js';
import type { Deps } from '../services/context.js';
import { DISPATCH_CHANNEL, mayWakeRunners } from '../services/context.js';
import type { Principal } from '../services/types.js';
import { Waiters } from '../services/waiters.js';
import type { RunTrajectories } from '../trajectory/run-trajectories.js';
import { drainRunner, listRunners, OPERATOR, type RunnerAdmin, revokeRunner } from './admin.js';
import { type BatchedArtifact, putArtifactBatch } from './artifact-batch.js';
import { type CompletionOutcome, completeRun, completeRuns } from './completion.js';
import { defineHarness, type HarnessView, listHarnesses } from './harnesses.js';
import { appendRunnerEvents, putArtifact } from './intervals.js';
import { expireHolder, grantLeases, heartbeat, type Lease, requeueExpired, sweep } from './leases.js';
import { placeableCache } from './placeable.js';
import {
  authenticateRunner,
  mintPairingToken,
  pair,
  type RunnerIdentity,
  type RunnerView,
  runnerKeys,
} from './registry.js';
import { CompletionsInput, HeartbeatInput, LeasesInput } from './schemas.js';
import { replicaSessionHub } from './sessions/hub.js';

export interface RunnerService {
  mintPairingToken(p: Principal, input: unknown): Promise<{ token: string; expiresAt: string }>;
  /** The operator's door (service token): a token for a shared runner. */
  mintSharedPairingToken(input: unknown): Promise<{ token: string; expiresAt: string }>;
  pair(input: unknown): Promise<{ runnerId: string; credential: string }>;
  list(p: Principal): Promise<RunnerView[]>;
  drain(p: Principal, runnerId: string): Promise<RunnerView>;
  revoke(p: Principal, runnerId: string): Promise<RunnerView & { requeued: string[] }>;
  /** The operator's door (service token): the shared runners (a tenant's runners are not listed). */
  listShared(): Promise<RunnerView[]>;
  /** The operator's door: drain a shared runner, as `drain` does (a tenant's runner: 404). */
  drainShared(runnerId: string): Promise<RunnerView>;
  /** The operator's door: revoke a shared runner, as `revoke` does (a tenant's runner: 404). */
  revokeShared(runnerId: string): Promise<RunnerView & { requeued: string[] }>;
  authenticate(credential: string): Promise<RunnerIdentity>;
  leases(runner: RunnerIdentity, input: unknown, signal?: AbortSignal): Promise<{ leases: Lease[] }>;
  heartbeat(runner: RunnerIdentity, input: unknown): Promise<{ lost: string[]; draining: boolean }>;
  events(runner: RunnerIdentity, runId: string, input: unknown): Promise<{ eventCount: number }>;
  artifact(
    runner: RunnerIdentity,
    runId: string,
    query: unknown,
    body: ReadableStream<Uint8Array> | null,
  ): Promise<{ path: string; address: string; size: number }>;
  /** Small files of out/ in one call (artifact-batch.ts): one answer per file, in order. */
  artifactBatch(
    runner: RunnerIdentity,
    runId: string,
    input: unknown,
  ): Promise<{ results: BatchedArtifact[] }>;
  complete(runner: RunnerIdentity, runId: string, input: unknown): Promise<{ run: RunView }>;
  /**
   * Several completions in order, each checked as `complete` checks one, all settled in one transaction
   * (intervals.ts `completeRuns`). The first refusal ends the batch: the items after it are `skipped`
   * (their `audit_prev` names a link the control plane did not accept), untouched, for the runner to sign
   * again.
   */
  completeMany(
    runner: RunnerIdentity,
    input: unknown,
  ): Promise<{ outcomes: CompletionOutcome[]; leases?: Lease[] }>;
  defineHarness(p: Principal, input: unknown): Promise<{ harness: HarnessView; created: boolean }>;
  listHarnesses(p: Principal): Promise<HarnessView[]>;
  /** Every runner's public key (GET /keys). */
  keys(): Promise<PublicKeyEntry[]>;
}

/** One item of `completeMany`: settled (the run), refused (the error, as `complete` throws it) or skipped. */
export type { CompletionOutcome };

export interface RunnerServiceOptions {
  /** Lease requests re-check at least this often while they wait. */
  pollMs?: number;
  /** …or as this says (db/fallback-poll.ts: `aloneMs` while this process is alone on its database). */
  fallback?: FallbackPoll;
  /** The lease rule's numbers (leases/policy.ts). */
  lease: LeasePolicy;
  /** Runs' trajectories: where a runner's events and artifacts are stored (without one: 503). */
  trajectories?: RunTrajectories | null;
  /** The largest artifact a runner may upload, in bytes (default `ARTIFACT_MAX_BYTES`: 5 GiB). */
  artifactMaxBytes?: number;
}

/**
 * Wakes every waiting lease request (in-process; `Waiters`: a wake during a look is not lost); started/stopped
 * with the core. Also holds this replica's
 * runner credential cache (auth/runner-credentials.ts), evicted by RUNNERS_CHANNEL from the other replicas.
 */
export class LeaseWaiters extends Waiters {
  readonly credentials = new RunnerCredentials();
  private unlisten: (() => Promise<void>) | null = null;
  private unlistenRunners: (() => Promise<void>) | null = null;
  private reaper: NodeJS.Timeout | null = null;

  constructor(
    private readonly deps: Deps,
    private readonly lease: LeasePolicy,
    /**
     * Sweep expired leases on the lease rule's timer (default). Off where the dispatch loop runs: its sweep is
     * the same statement over every holder's leases.
     */
    private readonly sweeps = true,
  ) {
    super();
  }

  async start(): Promise<void> {
    // An inline-only create (analysis runs: no runner can take them) does not wake the long-polls.
    this.unlisten = await this.deps.ldb.listen(DISPATCH_CHANNEL, (payload) => {
      if (mayWakeRunners(payload)) this.wake();
    });
    // A revoke or drain on any replica: its runner's credential is looked up again here.
    // (A revoke also ends placements: this replica's remembered `placeable` answers are cleared.)
    this.unlistenRunners = await this.deps.ldb.listen(RUNNERS_CHANNEL, (hash) => {
      this.credentials.evict(hash);
      placeableCache(this.deps).clear();
    });
    // The lease rule's sweep, here when the core runs no dispatch loop: lost runner leases still requeue.
    if (!this.sweeps) return;
    this.reaper = setInterval(() => {
      sweep(this.deps, this.lease).catch((e: unknown) =>
        this.deps.log('error', 'runner lease sweep failed', { error: String(e) }),
      );
    }, this.lease.sweepMs);
    this.reaper.unref?.();
  }

  async stop(): Promise<void> {
    if (this.reaper) clearInterval(this.reaper);
    await this.unlisten?.();
    await this.unlistenRunners?.();
    this.wake();
  }
}

async function viewOf(deps: Deps, who: RunnerAdmin, runnerId: string): Promise<RunnerView> {
  const all = await listRunners(deps, who);
  const v = all.find((r) => r.id === runnerId);
  if (!v) throw new Error(`runner ${runnerId} vanished`);
  return v;
}

export function runnerService(deps: Deps, waiters: LeaseWaiters, opts: RunnerServiceOptions): RunnerService {
  const fallback = opts.fallback ?? everyPoll(opts.pollMs ?? 1000);
  const db: Db = deps.db;
  async function drainAs(who: RunnerAdmin, id: string): Promise<RunnerView> {
    waiters.credentials.evict(await drainRunner(deps, who, id));
    // Its kinds and images place nothing more here (the other replicas clear theirs at the NOTIFY).
    placeableCache(deps).clear();
    return viewOf(deps, who, id);
  }
  async function revokeAs(who: RunnerAdmin, id: string): Promise<RunnerView & { requeued: string[] }> {
    const { expired, credentialHash } = await revokeRunner(deps, who, id, (tx, rid) => expireHolder(tx, rid));
    // Its next call here is 401 at once, and its kinds and images place nothing more here (the other
    // replicas evict at the commit's NOTIFY).
    waiters.credentials.evict(credentialHash);
    placeableCache(deps).clear();
    // Its session channel here closes now (other replicas close theirs at the NOTIFY): exec and terminal
    // traffic no longer reaches it, and the sessions it held are settled lost by the sweep. The revoke has
    // committed: a failure here is logged (the hub's next touch closes the channel) rather than answered.
    await replicaSessionHub(deps)
      ?.revoked(id)
      .catch((e: unknown) =>
        deps.log('warn', 'closing a revoked runner’s session channel failed', { error: String(e) }),
      );
    const requeued = await requeueExpired(deps, opts.lease, expired);
    if (requeued.length > 0) waiters.wake();
    return { ...(await viewOf(deps, who, id)), requeued };
  }
  return {
    mintPairingToken: async (p, input) => {
      if (p.role !== 'admin') throw new ControlPlaneError('forbidden', 'admin role required');
      return mintPairingToken(deps, p.tenantId, p.actor, input);
    },
    mintSharedPairingToken: (input) => mintPairingToken(deps, null, 'service', input),
    pair: (input) => pair(deps, input),
    list: (p) => listRunners(deps, p),
    drain: (p, id) => drainAs(p, id),
    revoke: (p, id) => revokeAs(p, id),
    listShared: () => listRunners(deps, OPERATOR),
    drainShared: (id) => drainAs(OPERATOR, id),
    revokeShared: (id) => revokeAs(OPERATOR, id),
    authenticate: (credential) => authenticateRunner(db, credential, waiters.credentials),
    async leases(runner, raw, signal) {
      const r = LeasesInput.safeParse(raw);
      if (!r.success) throw r.error;
      const deadline = Date.now() + r.data.waitMs;
      for (;;) {
        // A wake while this looks is not lost: the wait below returns at once after one.
        const seen = waiters.generation;
        // grantLeases reads the runner's state under its row lock: a drain or revoke since is seen.
        const leases = await grantLeases(deps, opts.lease, runner, r.data.free);
        const left = deadline - Date.now();
        if (leases.length > 0 || left <= 0 || signal?.aborted) return { leases };
        await waiters.wait(Math.min(left, fallback.periodMs()), signal, seen);
        // Aborted while asleep (the runner went away, or this server began draining): grant nothing more —
        // a lease granted now would reach no one and hold its run until the lease expires.
        if (signal?.aborted) return { leases: [] };
      }
    },
    heartbeat: async (runner, raw) => {
      const r = HeartbeatInput.safeParse(raw);
      if (!r.success) throw r.error;
      return heartbeat(deps, opts.lease, runner, r.data.leases);
    },
    events: (runner, runId, input) =>
      appendRunnerEvents(deps, runner, runId, input, opts.trajectories ?? null),
    artifact: (runner, runId, query, body) =>
      putArtifact(deps, opts.trajectories ?? null, runner, runId, query, body, opts.artifactMaxBytes),
    artifactBatch: (runner, runId, input) =>
      putArtifactBatch(deps, opts.trajectories ?? null, runner, runId, input, opts.artifactMaxBytes),
    complete: async (runner, runId, input) => ({
      run: await completeRun(deps, opts.trajectories ?? null, runner, runId, input),
    }),
    async completeMany(runner, raw) {
      const input = CompletionsInput.safeParse(raw);
      if (!input.success) throw input.error;
      const { next, items } = input.data;
      const outcomes = await completeRuns(
        deps,
        opts.trajectories ?? null,
        runner,
        items.map(({ runId, ...item }) => ({ runId, raw: item })),
        // Each item was parsed with CompleteInput (CompletionsInput's items): not parsed again per item.
        { parsed: true },
      );
      if (next === undefined) return { outcomes };
      // Granted only when every item settled: the runner asks counting each item's lease as ended, and a
      // batch it sent behind another may be refused whole (its first link names one not accepted yet) while
      // its leases stay held — the runner's own count would then be short of what it holds.
      if (outcomes.some((o) => !('run' in o))) return { outcomes, leases: [] };
      // The next leases, granted after the batch committed (its own transaction, as a lease request's: the
      // grant's claim commits asynchronously, which a settle must not), under the same bound as a lease
      // request (`leaseBound`) — the settled items' leases are gone, a refused item's still counts. A failed
      // grant answers none (the runner then long-polls): it must not turn the settled batch's answer into an
      // error.
      const leases = await grantLeases(deps, opts.lease, runner, next.free).catch((e: unknown) => {
        deps.log('warn', 'the leases after a completion batch could not be granted', { error: String(e) });
        return [];
      });
      return { outcomes, leases };
    },
    defineHarness: (p, input) => defineHarness(deps, p, input),
    listHarnesses: (p) => listHarnesses(deps, p),
    keys: () => runnerKeys(db),
  };
}
