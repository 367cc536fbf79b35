// What a run consumed: model tokens (integers) and cost in USD (see primitives.Usd for precision).
import { z } from 'zod';
import { Tokens, Usd } from './primitives.js';

/**
 * The most USD one usage may say (admission's `MAX_USD`): spends are summed per envelope in float8/double, and
 * past ~1.8e308 a sum overflows (Infinity in memory, SQLSTATE 22003 in SQL — a settle that can never commit).
 * A reported cost above it is refused, never clamped: no real run costs 1e300 dollars.
 */
export const MAX_USAGE_USD = 1e300;

export const Usage = z.strictObject({
  inputTokens: Tokens,
  outputTokens: Tokens,
  cacheReadTokens: Tokens,
  cacheWriteTokens: Tokens,
  costUsd: Usd.max(MAX_USAGE_USD),
  llmCalls: z.int().nonnegative(),
});
export type Usage = z.infer<typeof Usage>;

/**
 * What an executor reports of a run's usage (an agent's report, a runner's completion): any subset of `Usage`
 * with its bounds (tokens and calls safe integers, `costUsd` ≤ `MAX_USAGE_USD`), plus measures of its own
 * (e.g. a runner's `cpuTimeMs`), each a non-negative finite number. Every reported usage is checked against
 * this before it is stored or charged.
 */
export const ReportedUsage = Usage.partial().catchall(z.number().nonnegative());
export type ReportedUsage = z.infer<typeof ReportedUsage>;

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
