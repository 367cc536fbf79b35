// everdict runs — list and filter runs (newest first): a table, or --json (one page as the API gives it).
import type { Command } from 'commander';
import type { Context, Done } from '../context.js';
import { CliError } from '../errors.js';
import { line } from '../io.js';
import { age, table } from '../table.js';
import { KINDS_HELP, LIFETIMES_HELP, STATUSES_HELP } from './options.js';

/** The largest page `GET /runs` gives. */
export const MAX_PAGE = 500;

interface RunRow {
  id: string;
  kind: string;
  status: string;
  lifetime: string;
  createdAt: string;
  group?: { id: string } | null;
  origin?: { causedByRunId?: string | null; cause?: string } | null;
}

interface ListOptions {
  kind?: string;
  status?: string;
  lifetime?: string;
  group?: string;
  causedBy?: string;
  limit: string;
  all?: boolean;
  json?: boolean;
}

/**
 * `GET /runs` with these filters: one page, or (`all`) every page, following the cursor to the end — a cursor
 * handed out twice would loop forever, so it stops there, saying so.
 */
export async function listRuns<T>(ctx: Context, filters: URLSearchParams, all: boolean): Promise<T[]> {
  const items: T[] = [];
  const seen = new Set<string>();
  let cursor: string | null = null;
  do {
    const q = new URLSearchParams(filters);
    if (cursor) q.set('cursor', cursor);
    const page: { items?: T[]; nextCursor?: string | null } = await ctx.call('GET', `/runs?${q}`);
    if (!Array.isArray(page?.items))
      throw new CliError('unavailable', 'GET /runs answered without `items` (is --url the control plane?)');
    items.push(...page.items);
    cursor = all ? (page.nextCursor ?? null) : null;
    if (cursor !== null && seen.has(cursor))
      throw new CliError('unavailable', `GET /runs handed out cursor ${cursor} twice: stopped following it`);
    if (cursor !== null) seen.add(cursor);
  } while (cursor);
  return items;
}

export async function runsCommand(ctx: Context, o: ListOptions): Promise<number> {
  // The control plane's page bounds (1–500): outside them it is a usage error here, not a refusal (3).
  if (!/^\d+$/.test(o.limit) || Number(o.limit) < 1 || Number(o.limit) > MAX_PAGE)
    throw new CliError('usage', `--limit is a whole number from 1 to ${MAX_PAGE}`);
  const base = new URLSearchParams();
  if (o.kind) base.set('kind', o.kind);
  if (o.status) base.set('status', o.status);
  if (o.lifetime) base.set('lifetime', o.lifetime);
  if (o.group) base.set('groupId', o.group);
  if (o.causedBy) base.set('causedBy', o.causedBy);
  base.set('limit', o.limit);
  const items = await listRuns<RunRow>(ctx, base, o.all === true);
  if (o.json) {
    line(ctx.io.stdout, JSON.stringify(items));
    return 0;
  }
  line(
    ctx.io.stdout,
    table(
      ['id', 'kind', 'status', 'lifetime', 'group', 'caused by', 'age'],
      items.map((r) => [
        r.id,
        r.kind,
        r.status,
        r.lifetime,
        r.group?.id ?? '-',
        r.origin?.causedByRunId ?? '-',
        age(r.createdAt),
      ]),
    ),
  );
  return 0;
}

export function registerRuns(program: Command, ctx: () => Context, done: Done): void {
  program
    .command('runs')
    .description('list runs, newest first (filters combine)')
    .option('--kind <kind>', KINDS_HELP)
    .option('--status <status>', STATUSES_HELP)
    .option('--lifetime <lifetime>', LIFETIMES_HELP)
    .option('--group <id>', 'runs of one group')
    .option('--caused-by <run>', 'runs a run caused')
    .option('--limit <n>', 'page size (1–500)', '50')
    .option('--all', 'follow the cursor to the last page')
    .option('--json', 'print the runs as one JSON array')
    .action((o: ListOptions) => done(runsCommand(ctx(), o)));
}
