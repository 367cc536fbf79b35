// everdict sandbox open|exec|shell|suspend|resume|close — held-open sessions over the sessions routes
// (`POST /sandboxes`, `/sandboxes/:id/exec|touch|suspend|resume|close`) and, for `shell`, the terminal
// ticket flow (`POST /runs/:id/terminal-ticket`, then the `GET /runs/:id/terminal?ticket=` WebSocket:
// binary frames are raw stdin/stdout, text frames JSON `{"type":"resize",cols,rows}` / `{"type":"exit",code}`).
// Thin by design: every subcommand is one call; the control plane owns the session. `shell` is in shell.ts.
import type { Command } from 'commander';
import type { Context, Done } from '../context.js';
import { CliError } from '../errors.js';
import { line } from '../io.js';
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

export async function execInSandbox(
  ctx: Context,
  id: string,
  argv: readonly string[],
  json?: boolean,
): Promise<number> {
  if (argv.length === 0) throw new CliError('usage', 'sandbox exec: give the argv after `--`');
  const r = await ctx.call<{ exitCode?: number; stdout?: string; stderr?: string; truncated?: boolean }>(
    'POST',
    path(id, 'exec'),
    {
      command: argv,
    },
  );
  if (json) line(ctx.io.stdout, JSON.stringify(r));
  else {
    if (r.stdout) ctx.io.stdout.write(r.stdout);
    if (r.stderr) ctx.io.stderr.write(r.stderr);
  }
  // Past the control plane's output cap the rest was dropped: what was printed is not all the command wrote.
  if (r.truncated)
    line(ctx.io.stderr, 'sandbox exec: output truncated at the output cap (the rest was dropped)');
  if (r.exitCode !== undefined && r.exitCode !== 0)
    throw new CliError('run_failed', `the command exited ${r.exitCode}`);
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
    .command('exec')
    .description('run a command in the session; exit 1 when it exits non-zero')
    .argument('<id>', 'the session run id')
    .argument('<argv...>', 'the command (after --)')
    .option('--json', 'print JSON')
    .action((id: string, argv: string[], o: { json?: boolean }) =>
      done(execInSandbox(ctx(), id, argv, o.json)),
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
