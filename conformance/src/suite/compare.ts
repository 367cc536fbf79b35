// Small helpers to say precisely how an implementation's output differs from a vector's expectation.
import type { VerifyOutputT } from '../contract/schemas.js';
import type { VerifyExpectT } from '../vectors/schema.js';

export class CaseFailure extends Error {}

/** A value for a failure line: addresses in full (they are what differs), anything else cut at 120 chars. */
export function short(value: unknown): string {
  if (typeof value === 'string' && /^[0-9a-f]{64}$/.test(value)) return value;
  const text = JSON.stringify(value) ?? 'nothing';
  return text.length > 120 ? `${text.slice(0, 119)}…` : text;
}

/** The first path at which two JSON values differ, or undefined if they are equal. */
export function firstDifference(expected: unknown, actual: unknown, path = ''): string | undefined {
  if (Object.is(expected, actual)) return undefined;
  if (typeof expected !== 'object' || typeof actual !== 'object' || expected === null || actual === null)
    return `${path || '/'}: expected ${short(expected)} got ${short(actual)}`;
  if (Array.isArray(expected) !== Array.isArray(actual)) return `${path || '/'}: expected ${short(expected)}`;
  const e = expected as Record<string, unknown>;
  const a = actual as Record<string, unknown>;
  for (const k of new Set([...Object.keys(e), ...Object.keys(a)])) {
    if (!(k in a)) return `${path}/${k}: missing, expected ${short(e[k])}`;
    if (!(k in e)) return `${path}/${k}: unexpected ${short(a[k])}`;
    const d = firstDifference(e[k], a[k], `${path}/${k}`);
    if (d !== undefined) return d;
  }
  return undefined;
}

export function describeVerify(v: VerifyExpectT | VerifyOutputT): string {
  if (!v.ok) return `${v.error}${v.index === undefined || v.index === null ? ' (no index)' : `@${v.index}`}`;
  const fields = (['head', 'length', 'idle_uj', 'account', 'phase', 'cost', 'signed_by'] as const)
    .filter((k) => v[k] !== undefined)
    .map((k) => `${k}=${short(v[k])}`);
  return ['ok', ...fields].join(' ');
}

export function sameField(name: string, expected: unknown, actual: unknown): void {
  if (expected !== actual) throw new CaseFailure(`expected ${name} ${short(expected)} got ${short(actual)}`);
}
