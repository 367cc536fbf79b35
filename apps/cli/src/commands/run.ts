// everdict run <kind> [argv…] — submit one run through the gate; --wait for it to settle, --follow to
// tail its trajectory while it runs. Exit 1 when a waited-for run did not succeed.

import { COMMAND_TAIL_BYTES, CommandResult, RunError } from '@everdict/run-model';
import type { Command } from 'commander';
import { z } from 'zod';
import type { Context, Done } from '../context.js';
import { CliError } from '../errors.js';
import { line } from '../io.js';
import { harnessRef } from './harness.js';
import { followLogs } from './logs.js';
import { LIFETIMES_HELP, parseJsonOption, parseJsonValue } from './options.js';
import { type RunSummary, TERMINAL, waitSettled } from './watch.js';

export interface RunOptions {
  subject?: string;
  image?: string;
  harness?: string;
  case?: string;
  caseSpec?: string;
  expected?: string;
  config?: string;
  ttl?: string;
  lifetime?: string;
  causedBy?: string;
  envelopeRuns?: string;
  inFlightCap?: string;
  requestId?: string;
  wait?: boolean;
  follow?: boolean;
  json?: boolean;
}

export function subjectOf(kind: string, argv: readonly string[], o: RunOptions): Record<string, unknown> {
  if (o.expected !== undefined && (kind !== 'eval' || o.subject))
    throw new CliError(
      'usage',
      "--expected is an eval run's answer key (with --harness and --case, not --subject)",
    );
  if (o.subject) return parseJsonOption('--subject', o.subject);
  switch (kind) {
    case 'command':
      if (argv.length === 0) throw new CliError('usage', 'run command: give the argv after `--`');
      return { command: [...argv], ...(o.image ? { image: o.image } : {}) };
    case 'eval': {
      if (!o.harness || !o.case) throw new CliError('usage', 'run eval: --harness ID@VERSION and --case ID');
      return {
        harness: harnessRef(o.harness),
        caseId: o.case,
        ...(o.caseSpec ? { caseSpec: parseJsonOption('--case-spec', o.caseSpec) } : {}),
        ...(o.expected === undefined ? {} : { expected: parseJsonValue('--expected', o.expected) }),
      };
    }
    case 'sandbox':
      return { image: o.image ?? 'default' };
    case 'analysis':
      return {
        config: o.config ? parseJsonOption('--config', o.config) : { fn: 'echo', value: argv.join(' ') },
      };
    default:
      throw new CliError('usage', `run ${kind}: give --subject JSON`);
  }
}

const intOption = (name: string, v: string | undefined): number | undefined => {
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v)) throw new CliError('usage', `${name} is a whole number`);
  return Number(v);
};

export function runSpecOf(kind: string, argv: readonly string[], o: RunOptions): Record<string, unknown> {
  const ttlSec = intOption('--ttl', o.ttl);
  const capRuns = intOption('--envelope-runs', o.envelopeRuns);
  const inFlightCap = intOption('--in-flight-cap', o.inFlightCap);
  return {
    kind,
    subject: subjectOf(kind, argv, o),
    ...(o.lifetime ? { lifetime: o.lifetime } : {}),
    ...(ttlSec === undefined ? {} : { ttlSec }),
    ...(capRuns === undefined && inFlightCap === undefined
      ? {}
      : {
          envelope: {
            ...(capRuns === undefined ? {} : { capRuns }),
            ...(inFlightCap === undefined ? {} : { inFlightCap }),
          },
        }),
    ...(o.requestId ? { requestId: o.requestId } : {}),
  };
}

export async function runCommand(
  ctx: Context,
  kind: string,
  argv: readonly string[],
  o: RunOptions,
): Promise<number> {
  const spec = runSpecOf(kind, argv, o);
  const { data } = await ctx.client.POST('/runs', {
    // The body is checked by the server (zod); the CLI builds it from flags.
    body: spec as never,
    ...(o.causedBy ? { headers: { 'x-everdict-caused-by': o.causedBy } } : {}),
  });
  const created = data as unknown as { run: { id: string; status: string }; admission: { class: string } };
  const id = created.run.id;
  if (o.json && !o.wait && !o.follow) line(ctx.io.stdout, JSON.stringify(created));
  else
    line(
      o.follow || o.json ? ctx.io.stderr : ctx.io.stdout,
      `${id} ${created.run.status} (${created.admission.class})`,
    );
  if (!o.wait && !o.follow) return 0;

  // The trajectory tail is closed on every way out: settled, refused, unavailable or interrupted.
  const stop = new AbortController();
  const outer = ctx.io.signal;
  const onAbort = () => stop.abort();
  outer?.addEventListener('abort', onAbort, { once: true });
  // Followed, the output reads as `logs --follow` prints it: each stream's text to its own (--json: as stored).
  const trajectory = o.follow ? followLogs(ctx, id, stop.signal, o.json === true) : Promise.resolve(0);
  let grace: NodeJS.Timeout | undefined;
  let run: RunSummary;
  try {
    run = await waitSettled(ctx, id, { verbose: false, ...(outer ? { signal: outer } : {}) });
    // A settled run's trajectory is sealed or was never written: give the tail a moment, then stop it.
    grace = setTimeout(() => stop.abort(), 2_000);
  } finally {
    if (grace === undefined) stop.abort();
    await trajectory;
    clearTimeout(grace);
    outer?.removeEventListener('abort', onAbort);
  }
  if (o.json) line(ctx.io.stdout, JSON.stringify(run));
  else {
    // --follow streamed the output as it happened; --wait prints the tails the run settled with.
    if (!o.follow) printOutputTails(ctx, run);
    line(ctx.io.stderr, `${id} ${run.status}`);
  }
  // Interrupted before it settled: how it ends was not observed, so it is not claimed (not `run_failed`).
  if (!TERMINAL.has(run.status))
    throw new CliError('interrupted', `stopped waiting: ${id} is still ${run.status}`);
  if (run.status !== 'succeeded') throw new CliError('run_failed', `${id} ended ${run.status}${why(run)}`);
  return 0;
}

/** Outputs whose `result` is a command's (run-model's `CommandResult`: its streams' tails). */
const OutputTails = z.object({ result: CommandResult });

/** The settled run's stdout and stderr tails, each to its own stream; nothing for other kinds' results. */
export function printOutputTails(ctx: Context, run: RunSummary): void {
  const tails = OutputTails.safeParse(run.outputs);
  if (!tails.success) return;
  const { stdout, stderr, truncated } = tails.data.result;
  if (stdout) ctx.io.stdout.write(stdout);
  if (stderr) ctx.io.stderr.write(stderr);
  if (truncated)
    line(
      ctx.io.stderr,
      `${run.id}: output truncated to the last ${COMMAND_TAIL_BYTES / 1024} KiB of each stream (the whole streams: --follow, or GET /runs/${run.id}/trajectory)`,
    );
}

/** `: <code>: <message>` from the run's error (exit_code: exited with 3), when it has one. */
function why(run: RunSummary): string {
  const error = RunError.safeParse(run.error);
  return error.success ? `: ${error.data.code}: ${error.data.message}` : '';
}

/** The flags `subjectOf` reads, for every command that builds a run spec (run, experiment, trigger). */
export function subjectOptions(cmd: Command): Command {
  return cmd
    .option('--subject <json>', 'the subject as JSON (any kind)')
    .option('--image <ref>', 'image of a command or sandbox')
    .option('--harness <id@version>', 'eval: the harness')
    .option('--case <id>', 'eval: the case id')
    .option('--case-spec <json>', 'eval: an ad-hoc case')
    .option(
      '--expected <json>',
      "eval: the case's answer key, for the graders (subject.expected; never given to the harness)",
    )
    .option('--config <json>', 'analysis: the inline configuration');
}

export function registerRun(program: Command, ctx: () => Context, done: Done): void {
  const run = program
    .command('run')
    .description('submit a run (command, eval, sandbox, analysis, or any kind with --subject)')
    .argument('<kind>', 'command | eval | sandbox | analysis | agent | …')
    .argument('[argv...]', 'for `command`: the argv to run (after --)');
  subjectOptions(run)
    .option('--lifetime <lifetime>', LIFETIMES_HELP)
    .option('--ttl <seconds>', 'hard expiry from now')
    .option('--caused-by <run>', 'the run that caused this one (draws from its envelope)')
    .option('--envelope-runs <n>', 'open a delegated envelope capped at n runs')
    .option('--in-flight-cap <n>', "the envelope's in-flight cap")
    .option('--request-id <id>', 'idempotency key')
    .option(
      '--wait',
      'wait until the run settles, print its output tails (command, eval); exit 1 unless it succeeded',
    )
    .option('-f, --follow', 'tail the trajectory while it runs (implies --wait)')
    .option('--json', 'print JSON')
    .action((kind: string, argv: string[], o: RunOptions) => done(runCommand(ctx(), kind, argv, o)));
}
