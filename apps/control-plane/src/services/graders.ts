// Graders: pure functions of a run → {value, passed}. A small built-in set; unknown types are a 400.
import type { Run } from '@everdict/run-model';
import { ControlPlaneError } from '../errors.js';

export interface Grade {
  value: number;
  passed: boolean | null;
  detail: Record<string, unknown>;
}
export type Grader = (run: Run, config: Record<string, unknown>) => Grade;

function at(value: unknown, path: string): unknown {
  let cur: unknown = value;
  for (const part of path.split('.').filter(Boolean)) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

const pass = (ok: boolean, detail: Record<string, unknown> = {}): Grade => ({
  value: ok ? 1 : 0,
  passed: ok,
  detail,
});

export const GRADERS: Record<string, Grader> = {
  /** Passes when the run settled as `expect` (default succeeded). */
  status: (run, c) =>
    pass(run.status === (typeof c.expect === 'string' ? c.expect : 'succeeded'), { status: run.status }),
  /** outputs[path] deep-equals `value`. */
  output_equals: (run, c) => {
    const got = at(run.outputs, String(c.path ?? 'result'));
    return pass(JSON.stringify(got) === JSON.stringify(c.value), { got: got ?? null });
  },
  /** outputs[path] (a string) contains `substring`. */
  output_contains: (run, c) => {
    const got = at(run.outputs, String(c.path ?? 'summary'));
    return pass(typeof got === 'string' && got.includes(String(c.substring ?? '')), {});
  },
  /** outputs[path] as a number is the score; passes within [min, max] when given. */
  numeric: (run, c) => {
    const got = Number(at(run.outputs, String(c.path ?? 'result')));
    if (!Number.isFinite(got)) return { value: 0, passed: false, detail: { error: 'not a number' } };
    const ok = (typeof c.min !== 'number' || got >= c.min) && (typeof c.max !== 'number' || got <= c.max);
    return {
      value: got,
      passed: typeof c.min === 'number' || typeof c.max === 'number' ? ok : null,
      detail: {},
    };
  },
};

export function graderFor(type: string): Grader {
  const g = GRADERS[type];
  if (!g)
    throw new ControlPlaneError('bad_request', `unknown grader type ${type}`, {
      known: Object.keys(GRADERS),
    });
  return g;
}
