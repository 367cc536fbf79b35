import type { AgentService } from '../agents/service.js';
import type { RecordView, RunView } from '../ledger/views.js';
import type { RunnerService } from '../runners/service.js';
// The application services the HTTP layer calls. Every method is tenant-scoped by its Principal:
// another tenant's resource is `not_found`, never `forbidden`.
import type {
  AdmissionView,
  AgentRunEventInput,
  ApiKeyView,
  CreatedKeyView,
  CreateGroupInput,
  CreateKeyInput,
  CreateRunContext,
  CreateRunInput,
  CreateSubscriptionInput,
  EventView,
  FiringPage,
  FiringsQuery,
  GroupView,
  ListGroupsQuery,
  ListRunsQuery,
  Page,
  Principal,
  PromoteGroupInput,
  ScoreGroupInput,
  ScoreView,
  ScoringView,
  SubscriptionView,
  TenantPolicyPatch,
  TenantPolicyView,
} from './types.js';

export interface AuthService {
  /** Raw bearer key → principal; `unauthorized` (401) when unknown or revoked. */
  authenticate(rawKey: string): Promise<Principal>;
  /**
   * Call `onRevoked` once when `rawKey` stops authenticating (revoked, or gone) — heard from a revocation on
   * this replica or by NOTIFY from another at once, else found by a re-check every few seconds. For what a key
   * holds open past its request (SSE streams). Returns the stop function. Absent: nothing is watched.
   */
  watch?(rawKey: string, onRevoked: () => void): () => void;
  /**
   * The same by key id (a principal's `actor`), for what outlives the key itself (a terminal opened with a
   * ticket the key minted). An actor that is no API key (a service) is never revoked: nothing is called.
   */
  watchKeyId?(keyId: string, onRevoked: () => void): () => void;
  /** Admin only (`forbidden` 403). The raw key is in the result once and never again. */
  createKey(p: Principal, input: CreateKeyInput): Promise<CreatedKeyView>;
  listKeys(p: Principal): Promise<ApiKeyView[]>;
  revokeKey(p: Principal, keyId: string): Promise<ApiKeyView>;
  /** Admin only: a new tenant and its first admin key. */
  createTenant(
    p: Principal,
    input: { id: string; name?: string },
  ): Promise<{ tenantId: string; key: CreatedKeyView }>;
  /** Admin only: the caller's tenant policy, as admission holds it. */
  policy(p: Principal): Promise<TenantPolicyView>;
  /** Admin only: set the tenant-settable part of it (`cascade`); returns the policy now in force. */
  setPolicy(p: Principal, input: TenantPolicyPatch): Promise<TenantPolicyView>;
}

export interface RunService {
  /** Passes the one gate. Resolves when queued (201); throws 402 `envelope_exhausted` / 429 `capacity_exceeded`. */
  create(
    p: Principal,
    input: CreateRunInput,
    ctx?: CreateRunContext,
  ): Promise<{ run: RunView; admission: AdmissionView }>;
  /**
   * Up to 1,000 creates in input order, one gate decision each (as if sent one after another): per item,
   * `created` or the `error` that refused it (nothing saved for that item). A malformed batch throws.
   */
  createMany(
    p: Principal,
    inputs: readonly unknown[],
  ): Promise<Array<{ created: { run: RunView; admission: AdmissionView } } | { error: unknown }>>;
  list(p: Principal, query: ListRunsQuery): Promise<Page<RunView>>;
  get(p: Principal, runId: string): Promise<RunView>;
  /** Every score phase 2 gave the run, oldest first, with its detail (`not_found` for no such run). */
  scores(p: Principal, runId: string): Promise<ScoreView[]>;
  /** Cancels the run and its non-terminal causal descendants; `conflict` (409) if already terminal. */
  cancel(p: Principal, runId: string, reason?: string): Promise<{ run: RunView; cancelled: string[] }>;
  /** The run's record in wire form, verified from genesis on this read. */
  record(p: Principal, runId: string): Promise<RecordView>;
  /** The run's facts from the outbox, oldest first; `after` is an EventView.id. */
  events(p: Principal, runId: string, opts?: { after?: string; limit?: number }): Promise<Page<EventView>>;
}

/** A live feed's handle: `resume()` after the consumer paused it (its `onEvent` answered false). */
export interface EventSubscription {
  resume(): void;
  close(): Promise<void>;
}

export interface EventFeed {
  /** Tenant events after a cursor (outbox order). */
  list(
    p: Principal,
    opts?: { after?: string; limit?: number; runId?: string; kind?: string },
  ): Promise<Page<EventView>>;
  /**
   * Live feed: calls `onEvent` for each new event (in order, after `after` if given) until `close()`.
   * Woken by NOTIFY, with a poll fallback. Use for WebSocket / SSE routes. `onEvent` answering `false` pauses
   * the reading after that event (back-pressure: nothing is lost, the rest stays in the outbox) until
   * `resume()`.
   */
  subscribe(
    p: Principal,
    opts: { runId?: string; kind?: string; after?: string },
    onEvent: (e: EventView) => boolean | undefined,
  ): Promise<EventSubscription>;
}

export interface GroupService {
  /** Experiment or batch: N runs of one spec or one per case, admitted all-or-nothing. */
  create(p: Principal, input: CreateGroupInput): Promise<{ group: GroupView; runs: RunView[] }>;
  get(p: Principal, groupId: string): Promise<GroupView>;
  list(p: Principal, query: ListGroupsQuery): Promise<Page<GroupView>>;
  /** Applies graders over the group's runs: scores land on runs, the aggregate on the group. */
  score(
    p: Principal,
    groupId: string,
    input: ScoreGroupInput,
  ): Promise<{ scoring: ScoringView; scores: ScoreView[] }>;
  /** Experiment → scorecard (scores it with the given graders). `conflict` if not an experiment. */
  promote(p: Principal, groupId: string, input: PromoteGroupInput): Promise<GroupView>;
  /**
   * Cancels every run of the group that has not settled, each as `POST /runs/:id/cancel` cancels one (its
   * causal descendants too); answers the group as it is then and every run id cancelled.
   */
  cancel(p: Principal, groupId: string, reason?: string): Promise<{ group: GroupView; cancelled: string[] }>;
}

export interface SubscriptionService {
  create(p: Principal, input: CreateSubscriptionInput): Promise<SubscriptionView>;
  list(p: Principal): Promise<SubscriptionView[]>;
  get(p: Principal, id: string): Promise<SubscriptionView>;
  setEnabled(p: Principal, id: string, enabled: boolean): Promise<SubscriptionView>;
  delete(p: Principal, id: string): Promise<void>;
  /** The events it matched, newest first: the run each created, or why none (404 for another tenant's). */
  firings(p: Principal, id: string, query: FiringsQuery): Promise<FiringPage>;
}

export interface AgentBridgeService {
  /** The agent service reports a turn/run transition; the control plane owns the record. */
  report(p: Principal, input: AgentRunEventInput): Promise<RunView>;
}

export interface ControlPlaneServices {
  auth: AuthService;
  runs: RunService;
  events: EventFeed;
  groups: GroupService;
  subscriptions: SubscriptionService;
  agentBridge: AgentBridgeService;
  /** Runners, their leases and the harness registry (src/runners/); absent in cores built without them. */
  runners?: RunnerService;
  /** Held-open sandboxes (src/sessions/); absent when the core has no embedded placement. */
  sessions?: import('../sessions/service.js').SessionService;
  /** Agents, conversations, approvals and the agent service's leases (src/agents/). */
  agents?: AgentService;
}
