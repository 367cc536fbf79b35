// What a run consumed: model tokens (integers) and cost in USD (see primitives.Usd for precision).
import { z } from 'zod';
import { Tokens, Usd } from './primitives.js';

export const Usage = z.strictObject({
  inputTokens: Tokens,
  outputTokens: Tokens,
  cacheReadTokens: Tokens,
  cacheWriteTokens: Tokens,
  costUsd: Usd,
  llmCalls: z.int().nonnegative(),
});
export type Usage = z.infer<typeof Usage>;

export const EMPTY_USAGE: Usage = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  costUsd: 0,
  llmCalls: 0,
});

export function addUsage(a: Usage, b: Usage): Usage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
    cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens,
    costUsd: a.costUsd + b.costUsd,
    llmCalls: a.llmCalls + b.llmCalls,
  };
}

/** All tokens a run moved through models (input + output + cache read + cache write). */
export function totalTokens(usage: Usage): number {
  return usage.inputTokens + usage.outputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;
}
