// An agent as the control plane defines it (POST /agents): name, model, system prompt, tools, envelope,
// enabled — plus the price the agent service uses to cost its llm_call events. Parsed with zod wherever it
// crosses a boundary (a lease, a state file, the CLI).
import { z } from 'zod';

export const TOOL_NAMES = ['run_command', 'start_experiment', 'read_run', 'ask_approval'] as const;
export const ToolName = z.enum(TOOL_NAMES);
export type ToolName = z.infer<typeof ToolName>;

export const Pricing = z.strictObject({
  /** USD per million input tokens (cache reads are priced as input unless `cacheReadUsdPerMTok`). */
  inputUsdPerMTok: z.number().nonnegative(),
  outputUsdPerMTok: z.number().nonnegative(),
  cacheReadUsdPerMTok: z.number().nonnegative().optional(),
});
export type Pricing = z.infer<typeof Pricing>;

export const AgentEnvelope = z.strictObject({
  usd: z.number().nonnegative().optional(),
  tokens: z.int().nonnegative().optional(),
  runs: z.int().nonnegative().optional(),
  inFlight: z.int().positive().optional(),
});
export type AgentEnvelope = z.infer<typeof AgentEnvelope>;

export const AgentSpec = z.strictObject({
  id: z.string().min(1).max(200),
  /** Behaviour changes make a new version (PATCH /agents/:id); the manifest binds it. */
  version: z.string().min(1).max(64),
  name: z.string().min(1).max(200),
  model: z.string().min(1).max(200),
  systemPrompt: z.string().max(100_000),
  tools: z.array(ToolName).max(TOOL_NAMES.length),
  envelope: AgentEnvelope.default({}),
  enabled: z.boolean().default(true),
  pricing: Pricing.optional(),
  /** Model calls one interval may make before it gives up (a loop guard, not a budget). */
  maxStepsPerInterval: z.int().positive().max(1000).default(16),
});
export type AgentSpec = z.infer<typeof AgentSpec>;
export type AgentSpecInput = z.input<typeof AgentSpec>;

/** The cost of one model call under a price, or undefined when the agent has no price. */
export function priceCall(
  pricing: Pricing | undefined,
  usage: { inputTokens: number; outputTokens: number; cacheReadTokens?: number },
): number | undefined {
  if (!pricing) return undefined;
  const cached = usage.cacheReadTokens ?? 0;
  const fresh = Math.max(0, usage.inputTokens - cached);
  const cachedPrice = pricing.cacheReadUsdPerMTok ?? pricing.inputUsdPerMTok;
  return (
    (fresh * pricing.inputUsdPerMTok + cached * cachedPrice + usage.outputTokens * pricing.outputUsdPerMTok) /
    1e6
  );
}
