// The agent's tools: what the model is told (name, description, JSON Schema) and how its arguments are
// parsed (zod). `long` tools are dispatched — their result arrives later, as a Resolution — so a turn that
// calls one parks instead of waiting; `read_run` answers inside the interval.
import { z } from 'zod';
import type { ToolName } from '../agent-spec.js';
import type { ToolSpec } from '../model/provider.js';

export const RunCommandArgs = z.strictObject({
  command: z.array(z.string().min(1).max(10_000)).min(1).max(256),
  image: z.string().min(1).max(500).optional(),
});
export const StartExperimentArgs = z
  .strictObject({
    harness: z.string().min(1).max(200),
    dataset: z.string().min(1).max(200).optional(),
    repeat: z.int().min(1).max(1000).optional(),
    cases: z.array(z.record(z.string(), z.json())).min(1).max(1000).optional(),
  })
  .refine((a) => a.repeat === undefined || a.cases === undefined, 'at most one of repeat or cases');
export const ReadRunArgs = z.strictObject({
  runId: z.string().min(1).max(200),
  what: z.enum(['outputs', 'trajectory']).default('outputs'),
  offset: z.int().nonnegative().default(0),
  limit: z.int().positive().max(1000).default(100),
});
export const AskApprovalArgs = z.strictObject({
  question: z.string().min(1).max(10_000),
});

export interface ToolEntry {
  readonly spec: ToolSpec;
  readonly args: z.ZodType;
  /** Dispatched and resolved later (a caused run, a person) — never awaited inside the interval. */
  readonly long: boolean;
}

export const TOOLS: Record<ToolName, ToolEntry> = {
  run_command: {
    long: true,
    args: RunCommandArgs,
    spec: {
      name: 'run_command',
      description:
        'Run a command (argv) in a sandbox as a run caused by this turn. It draws from your envelope; the result arrives later.',
      parameters: {
        type: 'object',
        properties: {
          command: { type: 'array', items: { type: 'string' }, minItems: 1 },
          image: { type: 'string' },
        },
        required: ['command'],
        additionalProperties: false,
      },
    },
  },
  start_experiment: {
    long: true,
    args: StartExperimentArgs,
    spec: {
      name: 'start_experiment',
      description:
        'Start an eval experiment: a group of eval runs of a registered harness version ("id@version") — `repeat` runs of one case, or one run per entry of `cases` — caused by this turn, each drawing from your envelope. The result (later) is the group id and its runs with their statuses; read a run\'s outputs with read_run.',
      parameters: {
        type: 'object',
        properties: {
          harness: { type: 'string', description: 'id@version' },
          dataset: { type: 'string', description: 'the case id and the group label' },
          repeat: { type: 'integer', minimum: 1, maximum: 1000 },
          cases: { type: 'array', items: { type: 'object' }, minItems: 1, maxItems: 1000 },
        },
        required: ['harness'],
        additionalProperties: false,
      },
    },
  },
  read_run: {
    long: false,
    args: ReadRunArgs,
    spec: {
      name: 'read_run',
      description: "Read a run's outputs, or a page of its trajectory (events).",
      parameters: {
        type: 'object',
        properties: {
          runId: { type: 'string' },
          what: { type: 'string', enum: ['outputs', 'trajectory'] },
          offset: { type: 'integer', minimum: 0 },
          limit: { type: 'integer', minimum: 1, maximum: 1000 },
        },
        required: ['runId'],
        additionalProperties: false,
      },
    },
  },
  ask_approval: {
    long: true,
    args: AskApprovalArgs,
    spec: {
      name: 'ask_approval',
      description: 'Ask a person to approve something. The answer may take days; the turn waits parked.',
      parameters: {
        type: 'object',
        properties: { question: { type: 'string' } },
        required: ['question'],
        additionalProperties: false,
      },
    },
  },
};

export function toolSpecs(names: readonly ToolName[]): ToolSpec[] {
  return names.map((n) => TOOLS[n].spec);
}
