// The agent service's control-plane side, composed: the registry (POST/PATCH/GET /agents), conversations
// and their turns, approvals (GET + POST /runs/:id/input), and what the agent service calls with the service
// token — leases, heartbeats, tool calls, transcript reads and writes, leased reports.
import { setTimeout as delay } from 'node:timers/promises';
import { everyPoll, type FallbackPoll } from '../db/fallback-poll.js';
import type { PublicKeyEntry } from '../keys/registry.js';
import type { LeasePolicy } from '../leases/policy.js';
import type { RunView } from '../ledger/views.js';
import { OPERATOR, type RunnerAdmin } from '../runners/admin.js';
import { expireHolder } from '../runners/leases.js';
import { asControlPlaneError } from '../services/boundary.js';
import type { Deps } from '../services/context.js';
import type { GroupView, Principal } from '../services/types.js';
import type { RunTrajectories } from '../trajectory/run-trajectories.js';
import { type Dispatched, turnCalls } from './calls.js';
import { capabilityKey } from './compatible-hosts.js';
import { conversations } from './conversations.js';
import { type TurnDeclined, turnDeclines } from './declines.js';
import { storageWattsPerGb } from './energy.js';
import {
  type AgentHostView,
  agentHostKeys,
  type HolderPolicy,
  listAgentHosts,
  pairAgentHost,
  revokeAgentHost,
} from './hosts.js';
import { grantTurnLeases, heartbeatTurns } from './leases.js';
import { agentRegistry } from './registry.js';
import { turnReports } from './reports.js';
import { type RevokedTurns, settleRevokedTurns } from './revoke.js';
import {
  type AgentView,
  HeartbeatRequest,
  LeaseRequest,
  type PendingCall,
  type Resolution,
  type TurnLeaseView,
} from './schemas.js';
import type { TurnWaiters } from './turn-waiters.js';
import type { TurnDecline } from './turns.js';

export interface AgentService {
  create(p: Principal, input: unknown): Promise<AgentView>;
  patch(p: Principal, agentId: string, input: unknown): Promise<AgentView>;
  get(p: Principal, agentId: string): Promise<AgentView>;
  list(p: Principal): Promise<AgentView[]>;
  createConversation(p: Principal, input: unknown): Promise<GroupView>;
  message(p: Principal, conversationId: string, input: unknown): Promise<RunView>;
  answer(
    p: Principal,
    runId: string,
    input: unknown,
  ): Promise<{ run: RunView; callId: string; resolution: { approved: boolean; note?: string; by: string } }>;
  /** GET /runs/:id/input: what the turn waits on; `declined`: the holders that said they cannot resume it. */
  pending(
    p: Principal,
    runId: string,
  ): Promise<{ runId: string; status: string; pending: PendingCall[]; declined?: TurnDecline[] }>;
  lease(input: unknown, signal?: AbortSignal): Promise<{ leases: TurnLeaseView[] }>;
  heartbeat(input: unknown): Promise<{ lost: string[] }>;
  dispatch(runId: string, input: unknown): Promise<Dispatched>;
  resolutions(runId: string, input: unknown): Promise<{ resolutions: Resolution[] }>;
  read(runId: string, input: unknown): Promise<Record<string, unknown>>;
  append(runId: string, input: unknown): Promise<{ eventCount: number }>;
  transcript(
    runId: string,
    query: unknown,
  ): Promise<{ events: unknown[]; nextOffset: number; eventCount: number }>;
  report(p: Principal, input: unknown): Promise<RunView>;
  /**
   * POST /internal/agent/v1/runs/:id/decline: the holder of a parked turn's lease cannot resume it (its
   * manifest, or the snapshot, is refused): released now, never offered to it again (agents/declines.ts).
   */
  decline(runId: string, input: unknown): Promise<TurnDeclined>;
  /** POST /agents/hosts/pair: a pairing token + the host's public key → its host id (agents/hosts.ts). */
  pairHost(input: unknown): Promise<{ hostId: string; publicKey: string }>;
  /** The paired agent hosts' public keys (GET /keys). */
  hostKeys(): Promise<PublicKeyEntry[]>;
  /** GET /agents/hosts: the tenant's agent hosts and the shared ones. */
  listHosts(p: Principal): Promise<AgentHostView[]>;
  /**
   * POST /agents/hosts/:id/revoke (admin, its tenant's host): its next call is 401 `invalid_agent_host`; the
   * leases it held expire and are swept at once, and the answer says what became of every turn it held
   * (revoke.ts); declined turns no host can resume any more fail `no_compatible_host`.
   */
  revokeHost(p: Principal, hostId: string): Promise<AgentHostView & RevokedTurns>;
  /** The operator's door (service token): the shared agent hosts (a tenant's hosts are not listed). */
  listSharedHosts(): Promise<AgentHostView[]>;
  /** The operator's door: revoke a shared agent host, as `revokeHost` does (a tenant's host: 404). */
  revokeSharedHost(hostId: string): Promise<AgentHostView & RevokedTurns>;
}

export interface AgentServiceOptions {
  readonly lease: LeasePolicy;
  readonly trajectories: RunTrajectories | null;
  /** What wakes a waiting lease request (turn-waiters.ts); started and stopped with the core. */
  readonly waiters: TurnWaiters;
  /** A waiting lease request looks again at least this often, woken or not (default 1,000 ms). */
  readonly pollMs?: number;
  /** …or as this says (db/fallback-poll.ts: `aloneMs` while this process is alone on its database). */
  readonly fallback?: FallbackPoll;
  /** …and at most this often, however often it is woken (default 200 ms). */
  readonly recheckGapMs?: number;
  /** EVERDICT_STORAGE_W_PER_GB (default: the environment's, else 0.0012). */
  readonly storageWattsPerGb?: number;
  /** EVERDICT_AGENT_REQUIRE_PAIRED=1: only paired agent hosts may hold turn leases (default: any holder). */
  readonly requirePaired?: boolean;
}

/** Resolves after `ms`, or at once when `signal` aborts (its listener removed either way). */
const pause = (ms: number, signal?: AbortSignal) =>
  delay(ms, undefined, signal ? { signal } : {}).catch(() => undefined);

export function agentService(deps: Deps, o: AgentServiceOptions): AgentService {
  const registry = agentRegistry(deps);
  const convs = conversations(deps);
  const holders: HolderPolicy = { requirePaired: o.requirePaired ?? false };
  const calls = turnCalls(deps, o.trajectories, holders);
  const reports = turnReports(deps, o.trajectories, o.storageWattsPerGb ?? storageWattsPerGb(), holders);
  const fallback = o.fallback ?? everyPoll(o.pollMs ?? 1000);
  const gapMs = o.recheckGapMs ?? 200;
  /** A revoke by a tenant admin (its tenant's host) or the operator (a shared one): the host's turns settled. */
  async function revokeHostAs(who: RunnerAdmin, hostId: string): Promise<AgentHostView & RevokedTurns> {
    const { held } = await revokeAgentHost(deps, who, hostId, expireHolder);
    const tenantId = who === OPERATOR ? null : who.tenantId;
    const turns = await settleRevokedTurns(deps, o.lease, holders, { id: hostId, tenantId }, held);
    const view = (await listAgentHosts(deps.db, who)).find((h) => h.id === hostId);
    if (!view) throw new Error(`agent host ${hostId} vanished`);
    return { ...view, ...turns };
  }
  return {
    create: registry.create,
    patch: registry.patch,
    get: registry.get,
    list: registry.list,
    createConversation: convs.create,
    message: convs.message,
    answer: calls.answer,
    pending: calls.pending,
    /** Long-poll: answers as soon as a turn is ready, or empty after `waitMs`. */
    async lease(raw, signal) {
      const input = asControlPlaneError(() => LeaseRequest.parse(raw));
      const caps = capabilityKey(input.capabilities);
      const deadline = Date.now() + input.waitMs;
      for (;;) {
        const lookedAt = Date.now();
        // A wake while this looks is not lost: the wait below returns at once after one.
        const seen = o.waiters.generation;
        const leases = await grantTurnLeases(deps, o.lease, input.holder, input.free, holders, caps);
        if (leases.length > 0 || Date.now() >= deadline || signal?.aborted) return { leases };
        await o.waiters.wait(Math.min(fallback.periodMs(), Math.max(1, deadline - Date.now())), signal, seen);
        // Woken sooner than the gap (facts under load): the rest of the gap first, so a wake costs no more than
        // one lease transaction per gap. A turn is never missed this way: the next look sees what committed
        // before it.
        const early = lookedAt + gapMs - Date.now();
        if (early > 0 && !signal?.aborted)
          await pause(Math.min(early, Math.max(1, deadline - Date.now())), signal);
        // Aborted while asleep (the host went away, or this server began draining): grant nothing more.
        if (signal?.aborted) return { leases: [] };
      }
    },
    async heartbeat(raw) {
      const input = asControlPlaneError(() => HeartbeatRequest.parse(raw));
      return heartbeatTurns(deps, o.lease, input.holder, input.leases, holders);
    },
    dispatch: calls.dispatch,
    resolutions: calls.resolutions,
    read: calls.read,
    append: calls.append,
    transcript: calls.transcript,
    report: reports.report,
    decline: turnDeclines(deps, holders).decline,
    pairHost: (raw) => pairAgentHost(deps, raw),
    hostKeys: () => agentHostKeys(deps.db),
    listHosts: (p) => listAgentHosts(deps.db, p),
    revokeHost: (p, hostId) => revokeHostAs(p, hostId),
    listSharedHosts: () => listAgentHosts(deps.db, OPERATOR),
    revokeSharedHost: (hostId) => revokeHostAs(OPERATOR, hostId),
  };
}
