// Kysely table types of the ledger. jsonb columns are written as JSON text (see numeric.ts `json`).
import type { ColumnType } from 'kysely';
import type { GenInt8, Int8, J, Jsonb, Ts } from './column-types.js';
import type {
  AdmAdmissionsTable,
  AdmAgentsTable,
  AdmEnvelopeReleasesTable,
  AdmEnvelopesTable,
  AdmGlobalTable,
  AdmQueueTable,
  AdmSlotEndsTable,
  AdmSlotsTable,
  AdmTenantReleasesTable,
  AdmTenantsTable,
  AdmVtimeTable,
  AdmWfqTable,
} from './schema-admission.js';
import type {
  AgentCallsTable,
  AgentHostsTable,
  AgentsTable,
  AgentTurnDeclinesTable,
  AgentTurnsTable,
  AgentVersionsTable,
} from './schema-agents.js';
import type {
  HarnessesTable,
  RunnerArtifactsTable,
  RunnerImagesTable,
  RunnerJournalsTable,
  RunnerPairingTokensTable,
  RunnersTable,
} from './schema-runners.js';
import type {
  SessionChannelsTable,
  SessionExecsTable,
  SessionsTable,
  TerminalTicketsTable,
} from './schema-sessions.js';
import type {
  TrajectoryDeletionsTable,
  TrajectoryPoliciesTable,
  TrajectoryScoresTable,
  TrajectorySealQueueTable,
} from './schema-trajectories.js';

export interface TenantsTable {
  id: string;
  name: string;
  created_at: Ts;
}

export interface ApiKeysTable {
  id: string;
  tenant_id: string;
  key_hash: string;
  role: 'member' | 'admin';
  label: string;
  created_at: Ts;
  revoked_at: Ts | null;
}

export interface RunsTable {
  id: string;
  tenant_id: string;
  kind: string;
  status: string;
  lifetime: string;
  class: string;
  group_id: string | null;
  caused_by_run_id: string | null;
  created_by: string;
  created_at: Ts;
  /** The last transition, epoch ms (0017): the claim, the sweep and the park order compare it. */
  updated_at: Int8;
  ended_at: Ts | null;
  expires_at: Ts | null;
  envelope_id: string;
  subject: Jsonb<J>;
  origin: Jsonb<J>;
  placement: Jsonb<J | null>;
  attach: Jsonb<string[]>;
  envelope: Jsonb<J | null>;
  group_ref: Jsonb<J | null>;
  lineage: Jsonb<J | null>;
  outputs: Jsonb<J>;
  usage: Jsonb<J>;
  error: Jsonb<J | null>;
  unit_id: string;
  grants_id: string;
  record_head: string;
  record_length: number;
  /** The current interval's start, epoch ms (0017); null while not running. */
  interval_started_at: Int8 | null;
  interval_head: string | null;
  /** Starts of this run (0007): the epoch of its current lease. */
  attempt: ColumnType<number, number | undefined, number>;
  /** Executions of this run the lease sweep found lost and requeued (0030): the attempts rule counts these. */
  lost_attempts: ColumnType<number, number | undefined, number>;
  /** The run recorded a trajectory event (0013): its terminal transition queues the seal. */
  trajectory_open: ColumnType<boolean, boolean | undefined, boolean>;
  /** The sealed trajectory's ref (run-model TrajectoryRef); null until sealed (migration 0009). */
  trajectory: ColumnType<J | null, string | null | undefined, string | null>;
}

export interface RunGroupsTable {
  id: string;
  tenant_id: string;
  kind: string;
  label: string;
  spec: Jsonb<J>;
  scoring_id: string | null;
  request_id: string | null;
  created_by: string;
  created_at: Ts;
  updated_at: Ts;
}

export interface ScoringsTable {
  id: string;
  tenant_id: string;
  group_id: string;
  graders: Jsonb<J[]>;
  rescore_of: string | null;
  aggregate: Jsonb<J>;
  skipped_run_ids: ColumnType<string[], string | undefined, string>;
  created_at: Ts;
}

export interface ScoresTable {
  id: string;
  tenant_id: string;
  run_id: string;
  group_id: string | null;
  scoring_id: string;
  grader: string;
  grader_type: ColumnType<string, string | undefined, string>;
  value: number;
  passed: boolean | null;
  /** run-model's detail string (legacy rows: an object). */
  detail: Jsonb<unknown>;
  rescore_of: string | null;
  created_at: Ts;
}

export interface EventsTable {
  id: GenInt8;
  tx: GenInt8;
  tenant_id: string;
  kind: string;
  run_id: string | null;
  payload: Jsonb<J>;
  created_at: Ts;
}

export interface SubscriptionsTable {
  id: string;
  tenant_id: string;
  name: string;
  selector_kind: string;
  selector_filter: Jsonb<J>;
  schedule_cron: string | null;
  schedule_tz: string | null;
  run_spec: Jsonb<J>;
  cooldown_sec: number;
  max_depth: number;
  enabled: boolean;
  /** When it last started answering events: its creation or its latest re-enabling (migration 0028). */
  enabled_at: Ts;
  last_fired_at: Ts | null;
  created_by: string;
  created_at: Ts;
  deleted_at: Ts | null;
}

export interface SubscriptionFiringsTable {
  subscription_id: string;
  event_id: Int8;
  run_id: string | null;
  outcome: string;
  /** Why a refused firing was refused, in words (null when created, or written before 0037). */
  detail: string | null;
  created_at: Ts;
}

export interface ScheduleSlotsTable {
  subscription_id: string;
  slot: Ts;
  event_id: Int8 | null;
  created_at: Ts;
}

export interface ConsumerCursorsTable {
  consumer: string;
  tx: Int8;
  event_id: Int8;
  updated_at: Ts;
}

export interface RecordSegmentsTable {
  run_id: string;
  idx: number;
  tenant_id: string;
  kind: string;
  payload: Jsonb<J>;
  head: string;
  created_at: Ts;
}

export interface AttestationsTable {
  address: string;
  tenant_id: string;
  run_id: string;
  body: Jsonb<J>;
  created_at: Ts;
}

export interface RunLeasesTable {
  run_id: string;
  tenant: string;
  holder: string;
  epoch: Int8;
  granted_at_ms: Int8;
  renewed_at_ms: Int8;
  expires_at_ms: Int8;
}

export interface CascadeJobsTable {
  id: string;
  tenant_id: string;
  root_run_id: string;
  reason: string;
  skip_kinds: Jsonb<string[]>;
  skip_causes: Jsonb<string[]>;
  batches: ColumnType<number, number | undefined, number>;
  cancelled: ColumnType<number, number | undefined, number>;
  created_at: Ts;
  done_at: Ts | null;
}

export interface Database {
  sessions: SessionsTable;
  session_channels: SessionChannelsTable;
  terminal_tickets: TerminalTicketsTable;
  session_execs: SessionExecsTable;
  agents: AgentsTable;
  agent_versions: AgentVersionsTable;
  agent_turns: AgentTurnsTable;
  agent_hosts: AgentHostsTable;
  agent_turn_declines: AgentTurnDeclinesTable;
  agent_calls: AgentCallsTable;
  run_leases: RunLeasesTable;
  cascade_jobs: CascadeJobsTable;
  runners: RunnersTable;
  runner_pairing_tokens: RunnerPairingTokensTable;
  runner_images: RunnerImagesTable;
  runner_journals: RunnerJournalsTable;
  runner_artifacts: RunnerArtifactsTable;
  harnesses: HarnessesTable;
  adm_global: AdmGlobalTable;
  adm_tenants: AdmTenantsTable;
  adm_agents: AdmAgentsTable;
  adm_envelopes: AdmEnvelopesTable;
  /** Released counters (migration 0021, admission-store/sql/released.ts): what settles gave back, striped. */
  adm_envelope_releases: AdmEnvelopeReleasesTable;
  adm_tenant_releases: AdmTenantReleasesTable;
  /** Views: the main rows less (in flight, running) or plus (spend) their released sums — what to read. */
  adm_envelopes_now: AdmEnvelopesTable;
  adm_tenants_now: AdmTenantsTable;
  adm_admissions: AdmAdmissionsTable;
  adm_slots: AdmSlotsTable;
  adm_slot_ends: AdmSlotEndsTable;
  adm_queue: AdmQueueTable;
  adm_wfq: AdmWfqTable;
  adm_vtime: AdmVtimeTable;
  tenants: TenantsTable;
  api_keys: ApiKeysTable;
  runs: RunsTable;
  run_groups: RunGroupsTable;
  scorings: ScoringsTable;
  scores: ScoresTable;
  events: EventsTable;
  subscriptions: SubscriptionsTable;
  subscription_firings: SubscriptionFiringsTable;
  schedule_slots: ScheduleSlotsTable;
  consumer_cursors: ConsumerCursorsTable;
  record_segments: RecordSegmentsTable;
  attestations: AttestationsTable;
  trajectory_seal_queue: TrajectorySealQueueTable;
  trajectory_policies: TrajectoryPoliciesTable;
  trajectory_deletions: TrajectoryDeletionsTable;
  trajectory_scores: TrajectoryScoresTable;
}
