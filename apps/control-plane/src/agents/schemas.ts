// The agent routes' inputs (zod, parsed at the boundary) and views. An agent's behaviour — model, system
// prompt, tools, envelope, price, step limit — is versioned: a change to any of it is a new version; its
// name and whether it is enabled are not behaviour.
import { z } from 'zod';
import { INT4_MAX } from '../services/types.js';

export const TOOL_NAMES = ['run_command', 'start_experiment', 'read_run', 'ask_approval'] as const;
export const ToolName = z.enum(TOOL_NAMES);

/** What each turn of the agent may spend: delegated from its tenant (a slice of the tenant's envelope). */
export const AgentEnvelopeInput = z.strictObject({
  usd: z.number().nonnegative().optional(),
  tokens: z.int().nonnegative().optional(),
  /** Runs a turn may CAUSE (the turn itself is not one of them). */
  runs: z
    .int()
    .nonnegative()
    .max(INT4_MAX - 1)
    .optional(),
  /** Caused runs admitted and unsettled at once. */
  inFlight: z
    .int()
    .positive()
    .max(INT4_MAX - 1)
    .optional(),
});
export type AgentEnvelope = z.infer<typeof AgentEnvelopeInput>;

export const PricingInput = z.strictObject({
  inputUsdPerMTok: z.number().nonnegative(),
  outputUsdPerMTok: z.number().nonnegative(),
  cacheReadUsdPerMTok: z.number().nonnegative().optional(),
});

const Behaviour = {
  model: z.string().min(1).max(200),
  systemPrompt: z.string().max(100_000),
  tools: z
    .array(ToolName)
    .max(TOOL_NAMES.length)
    .refine((t) => new Set(t).size === t.length, 'tools are listed once each'),
  envelope: AgentEnvelopeInput,
  pricing: PricingInput.optional(),
  maxStepsPerInterval: z.int().positive().max(1000),
};

export const CreateAgentInput = z.strictObject({
  name: z.string().min(1).max(200),
  model: Behaviour.model,
  systemPrompt: Behaviour.systemPrompt.default(''),
  tools: Behaviour.tools.default([]),
  envelope: Behaviour.envelope.default({}),
  enabled: z.boolean().default(true),
  pricing: Behaviour.pricing,
  maxStepsPerInterval: Behaviour.maxStepsPerInterval.default(16),
});
export type CreateAgentInput = z.input<typeof CreateAgentInput>;

export const PatchAgentInput = z.strictObject({
  name: z.string().min(1).max(200).optional(),
  model: Behaviour.model.optional(),
  systemPrompt: Behaviour.systemPrompt.optional(),
  tools: Behaviour.tools.optional(),
  envelope: Behaviour.envelope.optional(),
  enabled: z.boolean().optional(),
  pricing: PricingInput.nullable().optional(),
  maxStepsPerInterval: Behaviour.maxStepsPerInterval.optional(),
});
export type PatchAgentInput = z.input<typeof PatchAgentInput>;

/** The versioned part of an agent (one row of agent_versions). */
export const AgentBehaviour = z.strictObject({
  model: Behaviour.model,
  systemPrompt: Behaviour.systemPrompt,
  tools: Behaviour.tools,
  envelope: Behaviour.envelope,
  pricing: Behaviour.pricing,
  maxStepsPerInterval: Behaviour.maxStepsPerInterval,
});
export type AgentBehaviour = z.infer<typeof AgentBehaviour>;

export interface AgentView extends AgentBehaviour {
  id: string;
  tenantId: string;
  name: string;
  version: number;
  enabled: boolean;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

export const CreateConversationInput = z.strictObject({ agentId: z.string().min(1).max(200) });
export const MessageInput = z.strictObject({ text: z.string().min(1).max(100_000) });
export const InputAnswer = z.strictObject({
  callId: z.string().min(1).max(256),
  approved: z.boolean(),
  note: z.string().max(10_000).optional(),
});

// ---- the agent service's side (service token) ----
const Holder = z.string().min(1).max(200);
const Epoch = z.int().positive().max(INT4_MAX);

/**
 * What a holder can resume, as it declares it (e.g. its transcript protocols and agent build): a set of
 * labels. A decline bars its holder only while it presents the same set (agents/declines.ts); none declared
 * is one set of its own.
 */
export const HolderCapabilities = z.array(z.string().min(1).max(200)).max(64);
export const LeaseRequest = z.strictObject({
  holder: Holder,
  free: z.int().min(0).max(64),
  waitMs: z.int().min(0).max(25_000).default(0),
  capabilities: HolderCapabilities.optional(),
});
export const HeartbeatRequest = z.strictObject({
  holder: Holder,
  leases: z.array(z.strictObject({ runId: z.string().min(1).max(200), epoch: Epoch })).max(256),
});
export const HeldLease = z.strictObject({ holder: Holder, epoch: Epoch });
/** Why a holder declines a parked turn's resume (agents/declines.ts): what the record refused. */
export const DECLINE_REASONS = ['manifest_mismatch', 'snapshot_mismatch'] as const;
export const DeclineInput = z.strictObject({
  holder: Holder,
  epoch: Epoch,
  reason: z.enum(DECLINE_REASONS),
  message: z.string().max(2000).optional(),
  /** The capability set the holder presented when it leased the turn (its lease request's). */
  capabilities: HolderCapabilities.optional(),
});
export type DeclineInput = z.infer<typeof DeclineInput>;
export const TranscriptAppend = z.strictObject({
  holder: Holder,
  epoch: Epoch,
  events: z.array(z.unknown()).max(1000),
});
export const TranscriptQuery = z.object({
  offset: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(10_000).default(1000),
});
/**
 * `start_experiment`: an experiment GROUP of eval runs of one registered harness version — `repeat` runs of
 * one case, or one run per entry of `cases` (neither: one run). `dataset` names the case (and labels the group).
 */
export const ExperimentInput = z
  .strictObject({
    /** `id@version` (a registered harness version). */
    harness: z.string().min(1).max(200),
    dataset: z.string().min(1).max(200).optional(),
    repeat: z.int().min(1).max(1000).optional(),
    cases: z.array(z.record(z.string(), z.unknown())).min(1).max(1000).optional(),
  })
  .refine((e) => e.repeat === undefined || e.cases === undefined, 'at most one of repeat or cases');
export type ExperimentInput = z.infer<typeof ExperimentInput>;

export const CallInput = z.discriminatedUnion('tool', [
  z.strictObject({
    holder: Holder,
    epoch: Epoch,
    callId: z.string().min(1).max(256),
    tool: z.literal('run_command'),
    input: z.strictObject({
      command: z.array(z.string().min(1).max(10_000)).min(1).max(256),
      image: z.string().min(1).max(500).optional(),
    }),
  }),
  z.strictObject({
    holder: Holder,
    epoch: Epoch,
    callId: z.string().min(1).max(256),
    tool: z.literal('start_experiment'),
    input: ExperimentInput,
  }),
  z.strictObject({
    holder: Holder,
    epoch: Epoch,
    callId: z.string().min(1).max(256),
    tool: z.literal('ask_approval'),
    input: z.strictObject({ question: z.string().min(1).max(10_000) }),
  }),
]);
export const ReadInput = z.strictObject({
  holder: Holder,
  epoch: Epoch,
  runId: z.string().min(1).max(200),
  what: z.enum(['outputs', 'trajectory']),
  offset: z.int().min(0).default(0),
  limit: z.int().min(1).max(1000).default(100),
});

/** A result that arrived for a call a turn dispatched. */
export type Resolution =
  | { kind: 'approval'; callId: string; approved: boolean; note?: string; by?: string }
  | {
      kind: 'run';
      callId: string;
      runId: string;
      status: 'succeeded' | 'failed' | 'cancelled';
      outputs?: unknown;
    }
  | {
      /** An experiment group: resolved when every run of it has settled; outputs are read with read_run. */
      kind: 'experiment';
      callId: string;
      groupId: string;
      /** run-model's group rollup of the settled runs. */
      status: 'succeeded' | 'partial' | 'failed' | 'cancelled';
      runs: { runId: string; status: 'succeeded' | 'failed' | 'cancelled' }[];
    };

/** A dispatched call still waiting: what `GET /runs/:id/input` lists for a person. */
export interface PendingCall {
  callId: string;
  kind: 'approval' | 'run' | 'experiment';
  tool: string;
  /** An approval's question. */
  prompt?: string;
  /** The caused run a `run` call waits on. */
  runId?: string;
  /** The experiment group an `experiment` call waits on, and its runs not yet settled. */
  groupId?: string;
  waitingOn?: string[];
  since: string;
}

/** What a lease hands the agent service: everything a process needs to run the turn's next interval. */
export interface TurnLeaseView {
  runId: string;
  tenant: string;
  epoch: number;
  leaseMs: number;
  heartbeatMs: number;
  unitId: string;
  grantsId: string;
  agent: {
    id: string;
    version: string;
    name: string;
    model: string;
    systemPrompt: string;
    tools: string[];
    envelope: AgentEnvelope;
    enabled: boolean;
    pricing?: z.infer<typeof PricingInput>;
    maxStepsPerInterval: number;
  };
  record: unknown;
  /**
   * The record's head now: a running turn's interval starts here (a paired host's attestation binds it); a
   * parked turn's interval starts at the head its `resumed` report answers.
   */
  recordHead: string;
  parkedAtMs?: number;
  input?: { text: string };
  resolutions: Resolution[];
}
