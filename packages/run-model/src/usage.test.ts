// A usage is bounded where it enters: a reported cost past MAX_USAGE_USD (admission's MAX_USD) is refused, so
// an envelope's spend — a float sum of usages — stays finite (past ~1.8e308 it overflows to Infinity, and a
// SQL settle fails with 22003 for ever).
import { describe, expect, it } from 'vitest';
import { MAX_USAGE_USD, ReportedUsage, Usage } from './index.js';

const zero = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, llmCalls: 0 };

describe('usage bounds', () => {
  it('Usage: costUsd up to MAX_USAGE_USD, not past it', () => {
    expect(MAX_USAGE_USD).toBe(1e300);
    expect(Usage.safeParse({ ...zero, costUsd: MAX_USAGE_USD }).success).toBe(true);
    for (const costUsd of [1e301, Number.MAX_VALUE])
      expect(Usage.safeParse({ ...zero, costUsd }).success, String(costUsd)).toBe(false);
  });

  it('ReportedUsage: any subset and an executor’s own measures; every field bounded', () => {
    expect(ReportedUsage.parse({ costUsd: 0.25, cpuTimeMs: 1200 })).toEqual({
      costUsd: 0.25,
      cpuTimeMs: 1200,
    });
    expect(ReportedUsage.parse({})).toEqual({});
    for (const bad of [
      { costUsd: 1e301 },
      { costUsd: Number.MAX_VALUE },
      { costUsd: Number.POSITIVE_INFINITY },
      { inputTokens: 1e300 },
      { outputTokens: 1.5 },
      { llmCalls: -1 },
      { cpuTimeMs: -1 },
      { cpuTimeMs: Number.POSITIVE_INFINITY },
    ])
      expect(ReportedUsage.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
  });
});
