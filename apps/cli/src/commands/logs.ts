// everdict logs <run> [--follow] [--json] — a run's trajectory from the trajectory store: a log event as its
// text (stdout's to stdout, stderr's to stderr), any other event as one line; --follow tails it until sealed;
// --json prints each event as stored, one JSON object a line.
import type { Command } from 'commander';
import type { Context, Done } from '../context.js';
import { line } from '../io.js';
import { describeEvent, describeTraceEvent, followTrajectory, parseTraceEvent } from './watch.js';

interface Page {
  items: Record<string, unknown>[];
  nextOffset: number;
  eventCount: number;
}

/** The most events one page of `GET /runs/:id/trajectory` gives. */
const PAGE = 1000;

function printer(ctx: Context, json: boolean) {
  return (ev: Record<string, unknown>): void => {
    if (json) line(ctx.io.stdout, JSON.stringify(ev));
    else if (ev.type === 'log' && typeof ev.message === 'string')
      line(ev.stream === 'stderr' ? ctx.io.stderr : ctx.io.stdout, ev.message);
    else line(ctx.io.stdout, describeEvent(String(ev.seq ?? '?'), ev));
  };
}

export async function logsCommand(
  ctx: Context,
  id: string,
  o: { follow?: boolean; json?: boolean },
): Promise<number> {
  const print = printer(ctx, o.json === true);
  if (o.follow) {
    const stop = ctx.io.signal ?? new AbortController().signal;
    await followTrajectory(ctx, id, stop, (eid, data) => {
      const ev = parseTraceEvent(data);
      if (ev) print(ev);
      else line(ctx.io.stdout, describeTraceEvent(eid, data)); // not an event object: shown as it came
    });
    return 0;
  }
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
