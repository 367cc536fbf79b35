// Graders: what phase 2 applies to a run. Deterministic graders evaluate here; judges are injected.
import { z } from 'zod';
import { Id, JsonValue } from './primitives.js';
import type { Run } from './run.js';

const name = z
  .string()
  .regex(/^[A-Za-z0-9_.:-]{1,100}$/)
  .optional();
/** A dotted path into the run record, e.g. `outputs.result.answer`, `outputs.summary`, `usage.costUsd`. */
export const FieldPath = z
  .string()
  .regex(/^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$/, 'a dotted path like outputs.result.x');

/** Passes when the run's `outputs.exitCode` equals `expected` (default 0). */
export const ExitCodeGrader = z.strictObject({
  type: z.literal('exit_code'),
  name,
  expected: z.int().default(0),
});
/** Passes when the text at `field` (default `outputs.summary`) matches the pattern. */
export const OutputRegexGrader = z.strictObject({
  type: z.literal('output_regex'),
  name,
  field: FieldPath.default('outputs.summary'),
  pattern: z.string().min(1).max(1000),
  flags: z
    .string()
    .regex(/^[imsu]*$/)
    .optional(),
});
/**
 * Passes when the text at `field` (default `outputs.summary`) contains `text`, or the text at `textPath` — a
 * reference into the same run, such as an eval case's answer key `subject.expected` (exactly one of the two).
 */
export const OutputContainsGrader = z.strictObject({
  type: z.literal('output_contains'),
  name,
  field: FieldPath.default('outputs.summary'),
  text: z.string().min(1).optional(),
  textPath: FieldPath.optional(),
  caseSensitive: z.boolean().default(true),
});
/**
 * Passes when the JSON at `path` deep-equals `equals`, or the JSON at `equalsPath` — a reference into the same
 * run, such as an eval case's answer key `subject.expected`: one grader for a dataset whose cases each carry their
 * own answer (exactly one of the two).
 */
export const JsonFieldEqualsGrader = z.strictObject({
  type: z.literal('json_field_equals'),
  name,
  path: FieldPath,
  equals: JsonValue.optional(),
  equalsPath: FieldPath.optional(),
});
/** Value = the number at `path`; passes when it lies within [min, max] (either bound optional, not both). */
export const NumericThresholdGrader = z.strictObject({
  type: z.literal('numeric_threshold'),
  name,
  path: FieldPath,
  min: z.number().optional(),
  max: z.number().optional(),
});
/** A model-based grader: evaluated by an injected Judge, never here. */
export const JudgeGrader = z.strictObject({
  type: z.literal('judge'),
  name,
  judgeId: Id,
  version: z.string().optional(),
  model: z.string().optional(),
  rubric: z.string().optional(),
});

export const Grader = z
  .discriminatedUnion('type', [
    ExitCodeGrader,
    OutputRegexGrader,
    OutputContainsGrader,
    JsonFieldEqualsGrader,
    NumericThresholdGrader,
    JudgeGrader,
  ])
  .superRefine((g, ctx) => {
    if (g.type === 'numeric_threshold' && g.min === undefined && g.max === undefined) {
      ctx.addIssue({ code: 'custom', path: ['min'], message: 'numeric_threshold needs min or max' });
    }
    if (g.type === 'json_field_equals' && (g.equals === undefined) === (g.equalsPath === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['equals'],
        message:
          'json_field_equals needs exactly one of equals (a value) and equalsPath (a field of the run)',
      });
    }
    if (g.type === 'output_contains' && (g.text === undefined) === (g.textPath === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['text'],
        message: 'output_contains needs exactly one of text and textPath (a field of the run)',
      });
    }
    if (g.type === 'output_regex') {
      try {
        new RegExp(g.pattern, g.flags);
      } catch {
        ctx.addIssue({ code: 'custom', path: ['pattern'], message: 'not a valid regular expression' });
      }
    }
  });
export type Grader = z.output<typeof Grader>;
export type GraderInput = z.input<typeof Grader>;
export type GraderType = Grader['type'];
export type JudgeGrader = z.output<typeof JudgeGrader>;
export type DeterministicGrader = Exclude<Grader, JudgeGrader>;

/** A grader's name: its `name`, or its type. Names are unique within one scoring. */
export function graderName(grader: Pick<Grader, 'name' | 'type'>): string {
  return grader.name ?? grader.type;
}

/** A non-empty grader list with unique names. */
export const GraderList = z
  .array(Grader)
  .min(1)
  .superRefine((graders, ctx) => {
    const seen = new Set<string>();
    graders.forEach((g, i) => {
      const n = graderName(g);
      if (seen.has(n))
        ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate grader name ${n}` });
      seen.add(n);
    });
  });

/** One grader's judgement of one run. */
export interface Verdict {
  value: number;
  passed?: boolean;
  detail: string;
}

/**
 * The value at a dotted path of the run (numeric segments index arrays), or undefined. Own properties only:
 * `constructor`, `__proto__`, `toString` … are not fields of a run record.
 */
export function readPath(run: Run, path: string): unknown {
  let here: unknown = run;
  for (const key of path.split('.')) {
    if (here === null || typeof here !== 'object' || !Object.hasOwn(here, key)) return undefined;
    here = (here as Record<string, unknown>)[key];
  }
  return here;
}

function text(run: Run, field: string): string | undefined {
  const v = readPath(run, field);
  if (v === undefined) return undefined;
  return typeof v === 'string' ? v : JSON.stringify(v);
}

function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  return ka.every((k) => Object.hasOwn(rb, k) && jsonEqual(ra[k], rb[k]));
}

const pass = (ok: boolean, detail: string): Verdict => ({ value: ok ? 1 : 0, passed: ok, detail });
const missing = (where: string): Verdict => ({ value: 0, passed: false, detail: `${where} is missing` });

/** Evaluate one deterministic grader on one run. Pure; reads the run, never writes it. */
export function evaluateGrader(grader: DeterministicGrader, run: Run): Verdict {
  switch (grader.type) {
    case 'exit_code': {
      const code = run.outputs.exitCode;
      if (code === undefined) return missing('outputs.exitCode');
      return pass(code === grader.expected, `exit code ${code}, expected ${grader.expected}`);
    }
    case 'output_regex': {
      const t = text(run, grader.field);
      if (t === undefined) return missing(grader.field);
      const ok = new RegExp(grader.pattern, grader.flags).test(t);
      return pass(ok, `${grader.field} ${ok ? 'matches' : 'does not match'} /${grader.pattern}/`);
    }
    case 'output_contains': {
      const t = text(run, grader.field);
      if (t === undefined) return missing(grader.field);
      const wanted = grader.textPath === undefined ? grader.text : text(run, grader.textPath);
      if (wanted === undefined || wanted === '') return missing(grader.textPath ?? 'text');
      const ok = grader.caseSensitive ? t.includes(wanted) : t.toLowerCase().includes(wanted.toLowerCase());
      const what = grader.textPath === undefined ? '' : `${grader.textPath} `;
      return pass(
        ok,
        `${grader.field} ${ok ? 'contains' : 'does not contain'} ${what}${JSON.stringify(wanted)}`,
      );
    }
    case 'json_field_equals': {
      const v = readPath(run, grader.path);
      if (v === undefined) return missing(grader.path);
      const wanted = grader.equalsPath === undefined ? grader.equals : readPath(run, grader.equalsPath);
      if (wanted === undefined) return missing(grader.equalsPath ?? 'equals');
      const ok = jsonEqual(v, wanted);
      const what = grader.equalsPath === undefined ? '' : `${grader.equalsPath} `;
      return pass(ok, `${grader.path} ${ok ? 'equals' : 'differs from'} ${what}${JSON.stringify(wanted)}`);
    }
    case 'numeric_threshold': {
      const v = readPath(run, grader.path);
      if (typeof v !== 'number' || !Number.isFinite(v)) return missing(`a number at ${grader.path}`);
      const ok =
        (grader.min === undefined || v >= grader.min) && (grader.max === undefined || v <= grader.max);
      return {
        value: v,
        passed: ok,
        detail: `${grader.path} = ${v} within [${grader.min ?? '-∞'}, ${grader.max ?? '∞'}]: ${ok}`,
      };
    }
  }
}
