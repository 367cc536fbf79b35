// The `everdict` program: global options, every command, --help everywhere, and the exit code of a run of
// it (0 ok, 1 the run failed or did not verify, 2 usage, 3 refused, 4 unavailable, 130 interrupted). Runs
// in-process.
import { Command, CommanderError } from 'commander';
import { registerAgent } from './commands/agent.js';
import { registerArtifact } from './commands/artifact.js';
import { registerCancel } from './commands/cancel.js';
import { registerCompare } from './commands/compare.js';
import { registerDemo } from './commands/demo.js';
import { registerExperiment } from './commands/experiment.js';
import { registerGroups, registerKeys } from './commands/groups.js';
import { registerHarness } from './commands/harness.js';
import { registerLogs } from './commands/logs.js';
import { registerRecord } from './commands/record.js';
import { registerRun } from './commands/run.js';
import { registerRunners } from './commands/runners.js';
import { registerRuns } from './commands/runs.js';
import { registerSandbox } from './commands/sandbox.js';
import { registerShow } from './commands/show.js';
import { registerTrigger } from './commands/trigger.js';
import { type Context, DEFAULT_URL, type Done, type GlobalOptions, makeContext } from './context.js';
import { describeError, EXIT } from './errors.js';
import { type Io, line } from './io.js';

export interface ProgramExtras {
  /** Commands registered by the entry point (`start`): they bring their own process concerns. */
  register?(program: Command, ctx: () => Context, done: Done): void;
}

export function buildProgram(
  io: Io,
  extras: ProgramExtras = {},
): { program: Command; result: () => Promise<number> } {
  let work: Promise<number> = Promise.resolve(EXIT.ok);
  const program = new Command('everdict');
  program
    .description("Everdict's command line: runs, experiments, scores, records, sandboxes, agents")
    .option('--url <url>', `the control plane (env EVERDICT_URL; default ${DEFAULT_URL})`)
    .option('--key <key>', 'an API key (env EVERDICT_API_KEY)')
    .showHelpAfterError('(add --help for usage)')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
    });
  let context: Context | undefined;
  const ctx = () => {
    context ??= makeContext(program.opts<GlobalOptions>(), io);
    return context;
  };
  const done: Done = (p) => {
    work = p;
    return p.then(() => undefined);
  };
  // In the order `--help` lists them: one run, then evals, then what makes runs, then the tenant's admin.
  registerRun(program, ctx, done);
  registerRuns(program, ctx, done);
  registerShow(program, ctx, done);
  registerLogs(program, ctx, done);
  registerArtifact(program, ctx, done);
  registerCancel(program, ctx, done);
  registerRecord(program, ctx, done);
  registerExperiment(program, ctx, done);
  registerCompare(program, ctx, done);
  registerGroups(program, ctx, done);
  registerHarness(program, ctx, done);
  registerTrigger(program, ctx, done);
  registerSandbox(program, ctx, done);
  registerAgent(program, ctx, done);
  registerRunners(program, ctx, done);
  registerKeys(program, ctx, done);
  registerDemo(program, ctx, done);
  extras.register?.(program, ctx, done);
  return { program, result: () => work };
}

/** Runs `everdict <argv>` and answers its exit code; never throws. */
export async function runCli(argv: readonly string[], io: Io, extras: ProgramExtras = {}): Promise<number> {
  const { program, result } = buildProgram(io, extras);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return await result();
  } catch (e) {
    if (e instanceof CommanderError) {
      // --help / --version are exit 0; every other complaint of the parser is a usage error.
      // --help / --version exit 0; a bare group (`everdict record`) prints its help as an error: usage.
      return e.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    const { line: text, exitCode } = describeError(e, io.signal?.aborted === true);
    line(io.stderr, text);
    return exitCode;
  }
}
