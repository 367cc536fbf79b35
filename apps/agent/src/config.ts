// The agent service's environment, parsed with zod (a bad value is a typed 400 `bad_request` at start).
import { z } from 'zod';
import { parseOrThrow } from './errors.js';
import { DEFAULT_AGENT_WATTS, DEFAULT_STORAGE_W_PER_GB } from './record/energy.js';

const positive = z.coerce.number().positive().finite();

export const AgentEnv = z.object({
  /** Draw of stored bytes, W per GB (a transcript park's idle energy). */
  EVERDICT_STORAGE_W_PER_GB: positive.default(DEFAULT_STORAGE_W_PER_GB),
  /** Draw of the agent process while an interval runs, W. */
  EVERDICT_AGENT_WATTS: positive.default(DEFAULT_AGENT_WATTS),
  /** OpenAI-compatible endpoint (e.g. https://api.openai.com/v1); absent → the scripted model. */
  EVERDICT_MODEL_BASE_URL: z.url().optional(),
  EVERDICT_MODEL_API_KEY: z.string().min(1).optional(),
  /** Where the local control plane keeps its ledger and the trajectory store its objects. */
  EVERDICT_DATA_DIR: z.string().min(1).default('.everdict/agent'),
});
export type AgentEnv = z.infer<typeof AgentEnv>;

export function agentEnv(env: NodeJS.ProcessEnv = process.env): AgentEnv {
  return parseOrThrow(AgentEnv, env, 'environment');
}
