// The agent service's environment, parsed with zod (a bad value is a typed 400 `bad_request` at start).
import { z } from 'zod';
import { parseOrThrow } from './errors.js';

export const AgentEnv = z.object({
  /** The control plane, e.g. http://127.0.0.1:8787. */
  EVERDICT_URL: z.url().optional(),
  /** The control plane's service token (its EVERDICT_INTERNAL_TOKEN). */
  EVERDICT_INTERNAL_TOKEN: z.string().min(1).optional(),
  /** OpenAI-compatible endpoint (e.g. https://api.openai.com/v1); absent → pass --script. */
  EVERDICT_MODEL_BASE_URL: z.url().optional(),
  EVERDICT_MODEL_API_KEY: z.string().min(1).optional(),
});
export type AgentEnv = z.infer<typeof AgentEnv>;

export function agentEnv(env: NodeJS.ProcessEnv = process.env): AgentEnv {
  return parseOrThrow(AgentEnv, env, 'environment');
}
