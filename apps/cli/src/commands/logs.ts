// everdict logs <run> [--follow] [--json] — a run's trajectory from the trajectory store: a log event as its
// text (stdout's to stdout, stderr's to stderr), a session's `exec` as a transcript (`$ argv`, its output, its
// exit), a conversation (an eval harness's trace, an agent turn) as one (chat-view.ts: `user: …`, `→ tool {…}`,
// `← tool {…}`, `· llm m · 120 in / 30 out tokens`), any other event as one line; --follow tails it until sealed;
// --json prints each event as stored, one JSON object a line.
import type { Command } from 'commander';
import { quote } from 'shell-quote';
import { z } from 'zod';
import type { Context, Done } from '../context.js';
import { line } from '../io.js';
import { conversationPrinter } from './chat-view.js';
import { ExecAnswer, execFailure } from './sandbox.js';
import { eventPrinter, followTrajectory } from './watch.js';

interface Page {
  items: Record<string, unknown>[];
  nextOffset: number;
  eventCount: number;
}

/** The most events one page of `GET /runs/:id/trajectory` gives. */
const PAGE = 1000;

/** A held-open session's `exec` call, as its trajectory holds it (`tool_call`, tool `exec`). */
const ExecCall = z.object({
  type: z.literal('tool_call'),
  tool: z.literal('exec'),
  callId: z.string(),
  input: z.object({ command: z.array(z.string()).min(1) }),
});
/** Its result (`tool_result` of the same call id): what `POST /sandboxes/:id/exec` answered. */
const ExecResult = z.object({ type: z.literal('tool_result'), callId: z.string(), output: ExecAnswer });

/**
 * How one event reads: a session's `exec` as a transcript — `$ argv` (shell-quoted), its output to stdout and
 * stderr, and why it failed (`[the command exited 3]`) as `sandbox exec` said it; anything else as a conversation
 * reads (a log event as its text, each stream to its own; any other event as one line).
 */
function printer(ctx: Context, json: boolean) {
  const execs = new Set<string>();
  const printExec = (ev: Record<string, unknown>): boolean => {
    const call = ExecCall.safeParse(ev);
    if (call.success) {
      execs.add(call.data.callId);
      line(ctx.io.stdout, `$ ${quote(call.data.input.command)}`);
      return true;
    }
    const result = ExecResult.safeParse(ev);
    if (!result.success || !execs.delete(result.data.callId)) return false;
    const o = result.data.output;
    // Each stream's text ends its line, so the next `$ argv` starts one of its own.
    if (o.stdout) line(ctx.io.stdout, o.stdout.replace(/\n$/, ''));
    if (o.stderr) line(ctx.io.stderr, o.stderr.replace(/\n$/, ''));
    if (o.truncated) line(ctx.io.stderr, '[output truncated at the output cap]');
    const failure = execFailure(o); // as `sandbox exec` said it when it ran
    if (failure) line(ctx.io.stdout, `[${failure.message}]`);
    return true;
  };
  const conversation = conversationPrinter(ctx, json, { everyone: true });
  return (ev: Record<string, unknown>): void => {
    if (json || !printExec(ev)) conversation(ev);
  };
}

/** Tails a run's trajectory until it is sealed (or `signal` aborts), printed as `logs` prints it. */
export function followLogs(ctx: Context, id: string, signal: AbortSignal, json: boolean): Promise<number> {
  return followTrajectory(ctx, id, signal, eventPrinter(ctx, printer(ctx, json)));
}

export async function logsCommand(
  ctx: Context,
  id: string,
  o: { follow?: boolean; json?: boolean },
): Promise<number> {
  if (o.follow) {
    await followLogs(ctx, id, ctx.io.signal ?? new AbortController().signal, o.json === true);
    return 0;
  }
  const print = printer(ctx, o.json === true);
  // What the trajectory holds now, page after page (a live run's later events: --follow).
  for (let offset = 0; ; ) {
    const page = await ctx.call<Page>(
      'GET',
      `/runs/${encodeURIComponent(id)}/trajectory?offset=${offset}&limit=${PAGE}`,
    );
    for (const ev of page.items) print(ev);
    if (page.items.length === 0 || page.nextOffset >= page.eventCount) return 0;
    offset = page.nextOffset;
  }
}

export function registerLogs(program: Command, ctx: () => Context, done: Done): void {
  program
    .command('logs')
    .description("a run's trajectory: its output as text, other events one line each")
    .argument('<run>', 'the run id')
    .option('-f, --follow', 'tail it until the trajectory is sealed')
    .option('--json', 'each event as stored, one JSON object a line')
    .action((id: string, o: { follow?: boolean; json?: boolean }) => done(logsCommand(ctx(), id, o)));
}
