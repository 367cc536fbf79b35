// POST /sandboxes/:id/exec: a command run to completion in an open session's compute. How it ended is the
// answer (ExecView): exited, stopped at a limit (its partial output kept) or its program not started; the
// compute gone settles the session lost; any other refusal leaves the session's activity as it was.
import { randomUUID } from 'node:crypto';
import { type ExecResult, isLimitStop, isPlacementError, programExitOf, utf8 } from '@everdict/placement';
import { ControlPlaneError, isControlPlaneError } from '../errors.js';
import { asControlPlaneError } from '../services/boundary.js';
import type { Principal } from '../services/types.js';
import { computeOf, handleOf, placementProblem } from './compute.js';
import { execEnded, execRefused, execStarted, holdsCompute, requireChannel, sessionOf } from './rows.js';
import type { SessionCore } from './service.js';
import { settleSession } from './settle.js';
import { EXEC_OUTPUT_CAP, ExecInput, type ExecView } from './types.js';

export async function execInSession(
  core: SessionCore,
  p: Principal,
  runId: string,
  raw: unknown,
): Promise<ExecView> {
  const input = asControlPlaneError(() => ExecInput.parse(raw));
  const { deps, log } = core;
  const marked = deps.clock();
  const { run, session } = await sessionOf(deps.db, p, runId, { state: 'open', at: marked });
  requireChannel(run, 'exec');
  const handle = handleOf(session.handle);
  const compute = computeOf(core, session.holder);
  const timeoutMs = input.timeoutMs ?? 60_000;
  // A command still running is traffic: the idle deadline covers its timeout.
  const execId = randomUUID();
  await execStarted(deps.db, p.tenantId, runId, execId, marked, timeoutMs);
  const started = performance.now();
  let view: ExecView;
  try {
    const r = await compute.driver.exec(handle, input.command, {
      timeoutMs,
      outputCapBytes: EXEC_OUTPUT_CAP,
    });
    view = exitedView(r, started);
  } catch (e) {
    const ended = endedView(e, started);
    if (ended) view = ended;
    else if (isPlacementError(e, 'gone')) {
      // The compute vanished. Under a row that still holds it open, the host lost it: settled so, and said
      // so. A suspend, close or reaper that released it meanwhile owns the session: 409, left as it is.
      const lost = await settleSession(core, p.tenantId, runId, 'lost', {
        decide: (s) => (holdsCompute(s, session.holder, handle.id) ? 'lost' : null),
      });
      if (!lost) {
        // 409 session_parked or session_ended — or, open again, it was parked and resumed on fresh compute.
        await sessionOf(deps.db, p, runId, { state: 'open' });
        throw new ControlPlaneError('conflict', `session ${runId} was parked while the command ran`, {
          runId,
          reason: 'session_parked',
        });
      }
      throw placementProblem(e);
    } else {
      // Refused (the compute unreachable, say): the row's activity as it was — a refusal changes nothing.
      await execRefused(deps.db, p.tenantId, runId, execId, marked, session).catch(() => undefined);
      core.deadlineMoved?.();
      throw placementProblem(e);
    }
  }
  await execEnded(deps.db, p.tenantId, runId, execId, deps.clock());
  core.deadlineMoved?.();
  // Answered only once recorded: a result the sealed trajectory would lack is a 503 the client sees.
  await log.exec(p.tenantId, runId, p.actor, input.command, view).catch((e: unknown) => {
    throw isControlPlaneError(e) && e.code === 'storage_unavailable'
      ? new ControlPlaneError(
          'storage_unavailable',
          `the command ran, but its record could not be stored in the session's trajectory: ${e.message}`,
          { runId, reason: 'trajectory_unavailable' },
        )
      : e;
  });
  return view;
}

function exitedView(r: ExecResult, started: number): ExecView {
  return {
    exitCode: r.exitCode,
    signal: r.signal,
    stdout: utf8(r.stdout),
    stderr: utf8(r.stderr),
    truncated: r.truncated,
    outcome: 'exited',
    durationMs: Math.round(performance.now() - started),
  };
}

/**
 * A driver's refusal that is the command's own end, as the answer: a limit that stopped it (with the partial
 * result it carries) or its program not started (a shell's 127/126, the reason as stderr). Else undefined.
 */
function endedView(e: unknown, started: number): ExecView | undefined {
  if (!isPlacementError(e)) return undefined;
  const durationMs = Math.round(performance.now() - started);
  if (isLimitStop(e)) {
    const partial = e.detail.result as Record<string, unknown> | undefined;
    return {
      exitCode: typeof partial?.exitCode === 'number' ? partial.exitCode : null,
      signal: typeof partial?.signal === 'string' ? partial.signal : null,
      stdout: partial?.stdout instanceof Uint8Array ? utf8(partial.stdout) : '',
      stderr: partial?.stderr instanceof Uint8Array ? utf8(partial.stderr) : '',
      truncated: partial?.truncated === true,
      outcome: e.code as ExecView['outcome'],
      durationMs,
    };
  }
  const program = programExitOf(e);
  if (program === undefined) return undefined;
  const stderr = `${e.message}\n`;
  return {
    exitCode: program,
    signal: null,
    stdout: '',
    stderr,
    truncated: false,
    outcome: 'not_started',
    durationMs,
  };
}
