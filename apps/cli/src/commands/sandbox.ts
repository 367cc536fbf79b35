// everdict sandbox open|list|show|exec|shell|suspend|resume|close — held-open sessions over the sessions routes
// (`POST /sandboxes`, `GET /sandboxes[/:id]`: sandbox-view.ts, `/sandboxes/:id/exec|touch|suspend|resume|close`) and, for `shell`, the terminal
// ticket flow (`POST /runs/:id/terminal-ticket`, then the `GET /runs/:id/terminal?ticket=` WebSocket:
// binary frames are raw stdin/stdout, text frames JSON `{"type":"resize",cols,rows}` / `{"type":"exit",code}`).
// Thin by design: every subcommand is one call; the control plane owns the session. `shell` is in shell.ts.
import type { Command } from 'commander';
import { z } from 'zod';
import type { Context, Done } from '../context.js';
import { CliError, documented } from '../errors.js';
import { line } from '../io.js';
import { listSandboxes, showSandbox } from './sandbox-view.js';
import { openShell } from './shell.js';

interface SandboxAnswer {
  run?: { id: string; status: string; expiresAt?: string | null };
  id?: string;
  status?: string;
  [k: string]: unknown;
}

const path = (id: string, action?: string) =>
  `/sandboxes/${encodeURIComponent(id)}${action ? `/${action}` : ''}`;

function show(ctx: Context, a: SandboxAnswer, json?: boolean): void {
  if (json) {
    line(ctx.io.stdout, JSON.stringify(a));
    return;
  }
  const run = a.run ?? (a as { id: string; status: string; expiresAt?: string });
  line(ctx.io.stdout, `${run.id} ${run.status}${run.expiresAt ? ` (expires ${run.expiresAt})` : ''}`);
}

/**
 * The answer of `POST /sandboxes/:id/exec` (the control plane's ExecView): `outcome` says how it ended —
 * `exited` (any exit code; null with the signal that killed it), or the limit that stopped it (`timeout`,
 * `oom`, `pids_exhausted`, `output_capped`) with the partial output kept, or `not_started` (its program not
 * found: 127, or not executable: 126; the reason on stderr). Fields are optional here so an
 * older control plane's answer (no `outcome`) still reads.
 */
export const ExecAnswer = z.looseObject({
  exitCode: z.number().int().nullable().optional(),
  signal: z.string().nullable().optional(),
  stdout: z.string().optional(),
  stderr: z.string().optional(),
  truncated: z.boolean().optional(),
  outcome: z.string().optional(),
  durationMs: z.number().optional(),
});
type ExecAnswer = z.infer<typeof ExecAnswer>;

const STOPS: Record<string, string> = {
  timeout: 'its time limit ran out',
  oom: "the sandbox's memory limit was reached",
  pids_exhausted: "the sandbox's process limit was reached",
  output_capped: 'its output passed the cap',
};

/** Why an exec is a failure (a stop by a limit, a non-zero exit, a signal), or null when it exited 0. */
export function execFailure(r: ExecAnswer): CliError | null {
  const took = r.durationMs === undefined ? '' : ` after ${r.durationMs} ms`;
  if (r.outcome === 'not_started')
    return new CliError('run_failed', `the program could not be started (exit ${r.exitCode ?? 'none'})`);
  if (r.outcome !== undefined && r.outcome !== 'exited')
    return new CliError(
      'exec_stopped',
      `the command was stopped: ${r.outcome} (${STOPS[r.outcome] ?? 'a limit of the sandbox'}${took}); the output above is partial`,
    );
  if (r.exitCode === 0) return null;
  if (typeof r.exitCode === 'number') return new CliError('run_failed', `the command exited ${r.exitCode}`);
  if (r.signal) return new CliError('run_failed', `the command was killed by ${r.signal}`);
  if (r.outcome === 'exited' || r.exitCode === null)
    return new CliError('run_failed', 'the command ended without an exit status');
  return null; // an answer with neither an exit code nor an outcome: nothing to say it failed
}

export const MAX_EXEC_TIMEOUT_MS = 24 * 60 * 60 * 1000;

export async function execInSandbox(
  ctx: Context,
  id: string,
  argv: readonly string[],
  json?: boolean,
  timeout?: string,
): Promise<number> {
  if (argv.length === 0) throw new CliError('usage', 'sandbox exec: give the argv after `--`');
  if (
    timeout !== undefined &&
    (!/^\d+$/.test(timeout) || Number(timeout) < 1 || Number(timeout) > MAX_EXEC_TIMEOUT_MS)
  )
    throw new CliError('usage', `--timeout is a whole number of milliseconds, 1 to ${MAX_EXEC_TIMEOUT_MS}`);
  const timeoutMs = timeout === undefined ? undefined : Number(timeout);
  const raw = await ctx.call<unknown>(
    'POST',
    path(id, 'exec'),
    { command: argv, ...(timeoutMs === undefined ? {} : { timeoutMs }) },
    // The call waits for the command: its request timeout covers the command's.
    timeoutMs === undefined ? {} : { extraTimeoutMs: timeoutMs },
  );
  const r = documented(ExecAnswer, raw, 'exec', 'ExecView');
  if (json) line(ctx.io.stdout, JSON.stringify(r));
  else {
    if (r.stdout) ctx.io.stdout.write(r.stdout);
    if (r.stderr) ctx.io.stderr.write(r.stderr);
  }
  // Past the control plane's output cap the rest was dropped: what was printed is not all the command wrote.
  if (r.truncated)
    line(ctx.io.stderr, 'sandbox exec: output truncated at the output cap (the rest was dropped)');
  const failure = execFailure(r);
  if (failure) throw failure;
  return 0;
}

export function registerSandbox(program: Command, ctx: () => Context, done: Done): void {
  const sandbox = program.command('sandbox').description('held-open sandbox sessions');
  sandbox
    .command('open')
    .description('open a sandbox session (POST /sandboxes)')
    .option('--image <ref>', 'the image', 'default')
    .option('--ttl <seconds>', 'hard expiry from now', '3600')
    .option('--idle <seconds>', 'closed after this long without exec or terminal traffic', '900')
    .option('--json', 'print JSON')
    .action((o: { image: string; ttl: string; idle: string; json?: boolean }) =>
      done(
        (async () => {
          if (!/^\d+$/.test(o.ttl)) throw new CliError('usage', '--ttl is a whole number of seconds');
          if (!/^\d+$/.test(o.idle)) throw new CliError('usage', '--idle is a whole number of seconds');
          const a = await ctx().call<SandboxAnswer>('POST', '/sandboxes', {
            image: o.image,
            ttlSec: Number(o.ttl),
            idleTimeoutSec: Number(o.idle),
          });
          show(ctx(), a, o.json);
          return 0;
        })(),
      ),
    );
  sandbox
    .command('list')
    .description("the tenant's open and parked sessions: time left (TTL, idle), what each has drawn")
    .option('--json', 'print JSON')
    .action((o: { json?: boolean }) => done(listSandboxes(ctx(), o)));
  sandbox
    .command('show')
    .description('one session: its image, holder, expiry, idle time left, what it has drawn, its snapshot')
    .argument('<id>', 'the session run id')
    .option('--json', 'print JSON')
    .action((id: string, o: { json?: boolean }) => done(showSandbox(ctx(), id, o)));
  sandbox
    .command('exec')
    .description(
      'run a command in the session; exit 1 when it exits non-zero or a limit stops it (exec_stopped)',
    )
    .argument('<id>', 'the session run id')
    .argument('<argv...>', 'the command (after --)')
    .option('--timeout <ms>', "the command's time limit (the control plane's default: 60000)")
    .option('--json', 'print JSON')
    .action((id: string, argv: string[], o: { json?: boolean; timeout?: string }) =>
      done(execInSandbox(ctx(), id, argv, o.json, o.timeout)),
    );
  sandbox
    .command('shell')
    .description(
      "an interactive terminal into the session (ticket + WebSocket); exits with the remote shell's status",
    )
    .argument('<id>', 'the session run id')
    .action((id: string) => done(openShell(ctx(), id)));
  for (const action of ['touch', 'suspend', 'resume', 'close'] as const)
    sandbox
      .command(action)
      .description(`${action} the session (POST /sandboxes/:id/${action})`)
      .argument('<id>', 'the session run id')
      .option('--json', 'print JSON')
      .action((id: string, o: { json?: boolean }) =>
        done(
          (async () => {
            show(ctx(), await ctx().call<SandboxAnswer>('POST', path(id, action), {}), o.json);
            return 0;
          })(),
        ),
      );
}
