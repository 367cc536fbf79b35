// Shared test fixtures: one valid spec per known kind, and runs driven to any status through the machine.
import {
  applyTransition,
  createRun,
  type Run,
  type RunEvent,
  type RunSpecInput,
  type RunStatus,
} from '../src/index.js';

export const T0 = '2026-01-01T00:00:00.000Z';
export const at = (seconds: number): string => new Date(Date.parse(T0) + seconds * 1000).toISOString();

const member = { cause: 'member', actor: 'u_1' } as const;
const runtime = { where: 'runtime', target: 'rt_1', isolation: 'container' } as const;

export const SPECS = {
  eval: {
    kind: 'eval',
    subject: { harness: { id: 'h_1', version: '1.0.0' }, caseId: 'case_1' },
    origin: member,
    placement: runtime,
  },
  agent: {
    kind: 'agent',
    subject: { agentId: 'ag_1', agentVersion: '3', model: 'm-1', permissionMode: 'ask' },
    origin: { cause: 'event', eventId: 'ev_1', eventKind: 'run.settled' },
    placement: { where: 'inline' },
  },
  command: {
    kind: 'command',
    subject: { path: 'scripts/check.sh', image: 'alpine:3.20', command: ['sh', 'scripts/check.sh'] },
    origin: member,
    placement: { where: 'driver', isolation: 'process' },
    attach: ['logs'],
  },
  sandbox: {
    kind: 'sandbox',
    subject: { image: 'ghcr.io/acme/env:1', source: { type: 'environment', environmentId: 'env_1' } },
    origin: member,
    placement: runtime,
    lifetime: 'session',
    attach: ['terminal', 'exec'],
    expiresAt: at(900),
  },
  analysis: {
    kind: 'analysis',
    subject: { viewId: 'view_1' },
    origin: { cause: 'schedule', scheduleId: 'sch_1' },
    placement: { where: 'inline' },
  },
} as const satisfies Record<string, RunSpecInput>;

export function queuedRun(spec: RunSpecInput = SPECS.eval, id = 'run_1'): Run {
  return createRun(spec, { id, tenant: 't_1', createdBy: 'u_1', now: T0 }).run;
}

const PATH_TO: Record<RunStatus, RunEvent[]> = {
  queued: [],
  running: [{ type: 'start' }],
  awaiting_input: [{ type: 'start' }, { type: 'await_input', reason: 'approve tool' }],
  succeeded: [{ type: 'start' }, { type: 'succeed' }],
  failed: [{ type: 'start' }, { type: 'fail', error: { code: 'exit_1', message: 'exit 1' } }],
  cancelled: [{ type: 'cancel', reason: 'user' }],
};

/** A valid run in `status`, reached through legal transitions one second apart. */
export function runIn(status: RunStatus, spec: RunSpecInput = SPECS.eval, id = 'run_1'): Run {
  let run = queuedRun(spec, id);
  PATH_TO[status].forEach((event, i) => {
    run = applyTransition(run, event, at(i + 1)).run;
  });
  return run;
}

/** Deep-freeze a value so any mutation throws in strict mode. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
