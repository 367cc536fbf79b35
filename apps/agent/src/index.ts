// @everdict/agent — the agent service: a model loop over a provider interface, tools behind the
// ControlPlane port, transcripts as trajectories, and turns that park as transcripts (never blocking).
export {
  AgentEnvelope,
  AgentSpec,
  type AgentSpecInput,
  Pricing,
  priceCall,
  TOOL_NAMES,
  ToolName,
} from './agent-spec.js';
export { AgentEnv, agentEnv } from './config.js';
export {
  type CommandRunSpec,
  type ControlPlane,
  type ExperimentSpec,
  type LeaseRef,
  Resolution,
  type RunView,
  type TranscriptPage,
  TurnLease,
  type TurnReport,
} from './control-plane.js';
export { AgentError, type AgentErrorCode, httpStatusOf, isAgentError } from './errors.js';
export { AGENT_BUILD, hostCapabilities } from './host/capabilities.js';
export {
  defaultStateDir,
  HostPairing,
  type IntervalSigner,
  intervalSigner,
  loadOrCreateKey,
  loadPairing,
} from './host/host-key.js';
export { type HostIdentity, hostIdentity, mintSharedToken, pairHost } from './host/pairing.js';
export { type BadLease, HttpControlPlane, type HttpControlPlaneOptions } from './http/http-control-plane.js';
export { toAgentError } from './http/refusals.js';
export { AGENT_METER, type IntervalOptions, type IntervalOutcome, runInterval } from './loop/interval.js';
export {
  type LeaseOutcome,
  type LeaseReport,
  serve,
  type WorkerOptions,
  workEach,
  workOnce,
} from './loop/worker.js';
export { OpenAiProvider, type OpenAiProviderOptions } from './model/openai-provider.js';
export type {
  ChatMessage,
  Completion,
  CompletionRequest,
  ModelProvider,
  ModelUsage,
  ToolCall,
  ToolSpec,
} from './model/provider.js';
export { ScriptedProvider, type ScriptedReply, type ScriptStep } from './model/scripted-provider.js';
export { AGENT_PROTOCOL, manifestBasisOf, manifestOf } from './record/identity.js';
export { phaseOf, type TurnPhase } from './record/turn-record.js';
export { TOOLS, toolSpecs } from './tools/catalog.js';
export { messagesOf, outstandingCalls } from './transcript/messages.js';
export { nameEvents, Transcript, type TranscriptDraft } from './transcript/transcript.js';
