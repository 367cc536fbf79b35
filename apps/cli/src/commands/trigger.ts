// Triggers turn events into runs (the control plane's subscriptions):
//   everdict trigger on <event-kind> <kind> [argv…] --name N [--filter JSON] — a run of that spec for each event
//     of that kind (the filter's fields equal the event's data), e.g. `on run.settled --filter '{"outcome":"failed"}'`;
//   everdict trigger every <cron> <kind> [argv…] --name N [--timezone TZ] — a run at each time of the schedule;
//   everdict trigger list | enable <id> | disable <id> | delete <id>;
//   everdict trigger firings <id> — the events it matched, newest first: the run each made, or why none.
// The run spec is built from the same flags as `run` (runSpecOf); the control plane checks it at creation as every
// firing reads it, so a spec it would refuse later is refused now and nothing is saved.
import type { components } from '@everdict/client';
import type { Command } from 'commander';
import type { Context, Done } from '../context.js';
import { CliError } from '../errors.js';
import { line } from '../io.js';
import { age, span, table } from '../table.js';
import { LIFETIMES_HELP, parseJsonOption } from './options.js';
import { type RunOptions, runSpecOf, subjectOptions } from './run.js';

/** A trigger as the control plane answers it (its `Subscription`, typed from its OpenAPI document). */
export type Trigger = components['schemas']['Subscription'];
/** One event a trigger matched (`GET /subscriptions/:id/firings`). */
export type Firing = components['schemas']['Firing'];

interface TriggerOptions extends RunOptions {
  name?: string;
  filter?: string;
  timezone?: string;
  cooldown?: string;
  maxDepth?: string;
  disabled?: boolean;
}

const whole = (flag: string, text: string | undefined, max: number): number | undefined => {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text) || Number(text) > max)
    throw new CliError('usage', `${flag} is a whole number ≤ ${max}`);
  return Number(text);
};

/** When a trigger fires, as one phrase: `on run.settled {"outcome":"failed"}` or `every 0 3 * * * (UTC)`. */
export function whenOf(t: Pick<Trigger, 'selector' | 'schedule'>): string {
  if (t.schedule) return `every ${t.schedule.cron} (${t.schedule.timezone})`;
  const filter = Object.keys(t.selector.filter).length > 0 ? ` ${JSON.stringify(t.selector.filter)}` : '';
  return `on ${t.selector.kind}${filter}`;
}

async function createTrigger(
  ctx: Context,
  when:
    | { selector: { kind: string; filter?: Record<string, unknown> } }
    | { schedule: { cron: string; timezone?: string } },
  kind: string,
  argv: readonly string[],
  o: TriggerOptions,
): Promise<number> {
  if (!o.name) throw new CliError('usage', 'trigger: give --name');
  // Every flag is checked before the call: a usage error saves nothing.
  const cooldownSec = whole('--cooldown', o.cooldown, 2_147_483_647);
  const maxDepth = whole('--max-depth', o.maxDepth, 32);
  const runSpec = runSpecOf(kind, argv, o);
  const { data: trigger } = await ctx.client.POST('/subscriptions', {
    body: {
      name: o.name,
      ...when,
      // The spec is checked by the server (the run schema, as every firing reads it); the CLI builds it from flags.
      runSpec: runSpec as never,
      ...(cooldownSec === undefined ? {} : { cooldownSec }),
      ...(maxDepth === undefined ? {} : { maxDepth }),
      ...(o.disabled ? { enabled: false } : {}),
    },
  });
  if (!trigger) throw new CliError('unavailable', 'POST /subscriptions answered without a body');
  if (o.json) line(ctx.io.stdout, JSON.stringify(trigger));
  else
    line(
      ctx.io.stdout,
      `trigger ${trigger.id} (${trigger.name}) ${whenOf(trigger)} → ${String(trigger.runSpec.kind)} run${trigger.enabled ? '' : ' (disabled)'}`,
    );
  return 0;
}

export async function listTriggers(ctx: Context, o: { json?: boolean }): Promise<number> {
  const items = (await ctx.client.GET('/subscriptions')).data?.items ?? [];
  if (o.json) line(ctx.io.stdout, JSON.stringify(items));
  else
    line(
      ctx.io.stdout,
      table(
        ['trigger', 'name', 'when', 'runs', 'enabled', 'last fired', 'next'],
        items.map((t) => [
          t.id,
          t.name,
          whenOf(t),
          String(t.runSpec.kind),
          t.enabled ? 'yes' : `no (${t.disabledReason ?? 'disabled'})`,
          t.lastFiredAt ? `${age(t.lastFiredAt)} ago` : 'never',
          // An enabled schedule's next slot; an event trigger fires on its events, a disabled one not at all.
          t.nextFireAt ? `in ${span((Date.parse(t.nextFireAt) - Date.now()) / 1000)}` : '-',
        ]),
      ),
    );
  return 0;
}

/** Why a firing made no run, as one phrase: `self_cause: run … was created by sub_…`, `capacity_exceeded (depth): …`. */
export function whyNot(refusal: NonNullable<Firing['refusal']>): string {
  const what = refusal.rule ? `${refusal.code} (${refusal.rule})` : refusal.code;
  return refusal.detail ? `${what}: ${refusal.detail}` : what;
}

async function listFirings(
  ctx: Context,
  id: string,
  o: { limit?: string; before?: string; json?: boolean },
): Promise<number> {
  const limit = whole('--limit', o.limit, 500) ?? 20;
  if (limit < 1) throw new CliError('usage', '--limit is a whole number from 1 to 500');
  if (o.before !== undefined && !/^\d+$/.test(o.before))
    throw new CliError('usage', '--before is an event id (decimal digits)');
  const { data: page } = await ctx.client.GET('/subscriptions/{id}/firings', {
    params: { path: { id }, query: { limit, ...(o.before === undefined ? {} : { before: o.before }) } },
  });
  if (!page) throw new CliError('unavailable', 'GET /subscriptions/:id/firings answered without a body');
  if (o.json) {
    line(ctx.io.stdout, JSON.stringify(page));
    return 0;
  }
  if (page.items.length === 0)
    line(ctx.io.stderr, `trigger ${id} has matched no event${o.before ? ' before that' : ''}`);
  else
    line(
      ctx.io.stdout,
      table(
        ['event', 'at', 'outcome', 'run, or why not'],
        page.items.map((f) => [
          f.eventId,
          `${age(f.at)} ago`,
          f.outcome,
          f.refusal ? whyNot(f.refusal) : (f.runId ?? '-'),
        ]),
      ),
    );
  if (page.nextBefore)
    line(ctx.io.stderr, `older: everdict trigger firings ${id} --before ${page.nextBefore}`);
  return 0;
}

async function setEnabled(ctx: Context, id: string, enabled: boolean): Promise<number> {
  const { data: t } = await ctx.client.PATCH('/subscriptions/{id}', {
    params: { path: { id } },
    body: { enabled },
  });
  if (!t) throw new CliError('unavailable', 'PATCH /subscriptions/:id answered without a body');
  line(ctx.io.stdout, `trigger ${t.id} (${t.name}) ${t.enabled ? 'enabled' : 'disabled'}`);
  return 0;
}

async function deleteTrigger(ctx: Context, id: string): Promise<number> {
  await ctx.client.DELETE('/subscriptions/{id}', { params: { path: { id } } });
  line(ctx.io.stdout, `trigger ${id} deleted (the runs it made stay)`);
  return 0;
}

/** The run-spec flags `run` takes that a trigger's spec may carry (not --wait, --caused-by: a firing has its cause). */
function runSpecOptions(cmd: Command): Command {
  return subjectOptions(cmd)
    .option('--lifetime <lifetime>', LIFETIMES_HELP)
    .option('--ttl <seconds>', 'hard expiry of each run, from its creation')
    .option('--envelope-runs <n>', 'each run opens a delegated envelope capped at n runs')
    .option('--in-flight-cap <n>', "that envelope's in-flight cap")
    .requiredOption('--name <name>', "the trigger's name (required)")
    .option('--cooldown <seconds>', 'fire at most once per this many seconds (default 0)')
    .option(
      '--max-depth <n>',
      'the causal depth a run it makes may reach, past which admission refuses it (default 3, ≤ 32)',
    )
    .option('--disabled', 'saved, but not firing until enabled')
    .option('--json', 'print JSON');
}

export function registerTrigger(program: Command, ctx: () => Context, done: Done): void {
  const trigger = program
    .command('trigger')
    .description('triggers: a run for each event of a kind, or on a schedule');
  runSpecOptions(
    trigger
      .command('on')
      .description('a run of this spec for each event of a kind (e.g. run.settled)')
      .argument('<event-kind>', 'the event kind (run.settled, run.created, group.scored, …)')
      .argument('<kind>', 'the kind of each run')
      .argument('[argv...]', 'for `command`: the argv (after --)')
      .option('--filter <json>', 'fields the event\'s data must equal, e.g. \'{"outcome":"failed"}\''),
  ).action((event: string, kind: string, argv: string[], o: TriggerOptions) =>
    done(
      createTrigger(
        ctx(),
        { selector: { kind: event, ...(o.filter ? { filter: parseJsonOption('--filter', o.filter) } : {}) } },
        kind,
        argv,
        o,
      ),
    ),
  );
  runSpecOptions(
    trigger
      .command('every')
      .description('a run of this spec at each time of a cron schedule')
      .argument('<cron>', "a cron expression, quoted: '0 3 * * *'")
      .argument('<kind>', 'the kind of each run')
      .argument('[argv...]', 'for `command`: the argv (after --)')
      .option('--timezone <tz>', 'the IANA zone the schedule reads in (default UTC)'),
  ).action((cron: string, kind: string, argv: string[], o: TriggerOptions) =>
    done(
      createTrigger(
        ctx(),
        { schedule: { cron, ...(o.timezone ? { timezone: o.timezone } : {}) } },
        kind,
        argv,
        o,
      ),
    ),
  );
  trigger
    .command('list')
    .description("the tenant's triggers: when each fires, what it runs, whether it is enabled")
    .option('--json', 'print JSON')
    .action((o: { json?: boolean }) => done(listTriggers(ctx(), o)));
  trigger
    .command('firings')
    .argument('<id>', 'the trigger')
    .description(
      'the events it matched, newest first: the run each made, or why none (a loop guard, the gate)',
    )
    .option('--limit <n>', 'at most this many (default 20, ≤ 500)')
    .option('--before <event>', 'older than this event id (the line after the table names it)')
    .option('--json', 'print JSON')
    .action((id: string, o: { limit?: string; before?: string; json?: boolean }) =>
      done(listFirings(ctx(), id, o)),
    );
  trigger
    .command('enable')
    .argument('<id>', 'the trigger')
    .description('fire again from now on')
    .action((id: string) => done(setEnabled(ctx(), id, true)));
  trigger
    .command('disable')
    .argument('<id>', 'the trigger')
    .description('stop firing (the runs it made are untouched)')
    .action((id: string) => done(setEnabled(ctx(), id, false)));
  trigger
    .command('delete')
    .argument('<id>', 'the trigger')
    .description('remove it (the runs it made stay)')
    .action((id: string) => done(deleteTrigger(ctx(), id)));
}
