// Builders of LOG cases: one per command, and `edit` for a single changed field.
import type { LogCase, LogError, LogFixture } from './log-define.js';

export type Input = (f: LogFixture) => unknown;

export const base = (name: string, command: string, description: string) =>
  ({ kind: 'log', class: 'LOG', name, command, description }) as const;

export function root(name: string, n: number, description: string, pinned?: LogCase['pinned']): LogCase {
  return {
    ...base(name, 'log-root', description),
    input: (f) => ({ leaves: f.leaves(n) }),
    expect: 'ok',
    treeSize: n,
    ...(pinned ? { pinned } : {}),
  };
}

export const rootFails = (name: string, description: string, input: Input | { stdin: string }): LogCase => ({
  ...base(name, 'log-root', description),
  input,
  expect: 'MalformedProof',
});

export const incl = (
  name: string,
  description: string,
  input: Input,
  expect: 'ok' | LogError = 'ok',
): LogCase => ({
  ...base(name, 'log-verify-inclusion', description),
  input,
  expect,
});

export const cons = (
  name: string,
  description: string,
  input: Input | { stdin: string },
  expect: 'ok' | LogError = 'ok',
): LogCase => ({
  ...base(name, 'log-verify-consistency', description),
  input,
  expect,
});

/** An object with one field replaced (or removed, for `undefined`). */
export function edit(o: Record<string, unknown>, field: string, value: unknown): Record<string, unknown> {
  const out = { ...o };
  if (value === undefined) delete out[field];
  else out[field] = value;
  return out;
}

export const EMPTY_BLAKE3 = 'af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262';
