// everdict groups [--kind K] [--limit N] [--json] — the tenant's run groups, newest first (GET /groups): each
// experiment, scorecard, conversation or batch with its runs by status, its latest scoring's pass rates and what
// its runs used (tokens, cost).
// everdict keys list | create [--admin] [--label L] | revoke <id> — the tenant's API keys (admin).
import type { components } from '@everdict/client';
import { EMPTY_USAGE, totalTokens } from '@everdict/run-model';
import type { Command } from 'commander';
import type { Context, Done } from '../context.js';
import { CliError } from '../errors.js';
import { line } from '../io.js';
import { age, fmtNumber, table } from '../table.js';
import type { GroupSummary } from './experiment.js';

interface GroupRow extends GroupSummary {
  createdAt: string;
}

/** `exit_code 100% · answer 50%`: each grader's pass rate in the group's latest scoring. */
function passRates(g: GroupSummary): string {
  const graders = g.scoring?.aggregate.graders ?? [];
  if (graders.length === 0) return '-';
  return graders
    .map(
      (a) =>
        `${a.grader} ${a.passRate === undefined || a.passRate === null ? '-' : `${fmtNumber(a.passRate * 100, 1)}%`}`,
    )
    .join(' · ');
}

/** `521 tokens · $0.0300`: what the group's runs used (its rollup's usage); `-` when they reported none. */
export function usedBy(g: GroupSummary): string {
  if (!g.rollup.usage) return '-';
  const u = { ...EMPTY_USAGE, ...g.rollup.usage };
  const tokens = totalTokens(u);
  const parts = [tokens > 0 && `${tokens} tokens`, u.costUsd > 0 && `$${u.costUsd.toFixed(4)}`];
  return parts.filter(Boolean).join(' · ') || '-';
}

async function listGroups(
  ctx: Context,
  o: { kind?: string; limit?: string; json?: boolean },
): Promise<number> {
  if (o.limit !== undefined && !/^\d+$/.test(o.limit))
    throw new CliError('usage', '--limit is a whole number');
  const query = new URLSearchParams({
    ...(o.kind ? { kind: o.kind } : {}),
    ...(o.limit ? { limit: o.limit } : {}),
  }).toString();
  const { items } = await ctx.call<{ items: GroupRow[] }>('GET', `/groups${query ? `?${query}` : ''}`);
  if (o.json) line(ctx.io.stdout, JSON.stringify(items));
  else
    line(
      ctx.io.stdout,
      table(
        ['group', 'kind', 'label', 'status', 'runs', 'scores', 'used', 'age'],
        items.map((g) => [
          g.id,
          g.kind,
          g.label || '-',
          g.rollup.status,
          Object.entries(g.rollup.byStatus)
            .map(([s, n]) => `${s} ${n}`)
            .join(', ') || '0',
          passRates(g),
          usedBy(g),
          age(g.createdAt),
        ]),
      ),
    );
  return 0;
}

type ApiKey = components['schemas']['ApiKey'];

async function listKeys(ctx: Context, o: { json?: boolean }): Promise<number> {
  const items: ApiKey[] = (await ctx.client.GET('/api-keys')).data?.items ?? [];
  if (o.json) line(ctx.io.stdout, JSON.stringify(items));
  else
    line(
      ctx.io.stdout,
      table(
        ['key', 'role', 'label', 'created', 'revoked'],
        items.map((k) => [k.id, k.role, k.label || '-', k.createdAt, k.revokedAt ?? '-']),
      ),
    );
  return 0;
}

async function createKey(
  ctx: Context,
  o: { admin?: boolean; label?: string; json?: boolean },
): Promise<number> {
  const { data: made } = await ctx.client.POST('/api-keys', {
    body: { role: o.admin ? 'admin' : 'member', ...(o.label ? { label: o.label } : {}) },
  });
  if (!made) throw new CliError('unavailable', 'POST /api-keys answered without a body');
  if (o.json) line(ctx.io.stdout, JSON.stringify(made));
  else {
    line(ctx.io.stderr, `key ${made.id} (${made.role}) — shown once, keep it now:`);
    line(ctx.io.stdout, made.key);
  }
  return 0;
}

async function revokeKey(ctx: Context, id: string): Promise<number> {
  const { data: k } = await ctx.client.POST('/api-keys/{id}/revoke', { params: { path: { id } } });
  if (!k) throw new CliError('unavailable', 'POST /api-keys/:id/revoke answered without a body');
  line(ctx.io.stdout, `key ${k.id} revoked at ${k.revokedAt}: its next call is 401`);
  return 0;
}

export function registerGroups(program: Command, ctx: () => Context, done: Done): void {
  program
    .command('groups')
    .description("the tenant's run groups, newest first: runs by status, latest pass rates")
    .option('--kind <kind>', 'experiment | scorecard | conversation | batch')
    .option('--limit <n>', 'page size (1–500)')
    .option('--json', 'print the groups as one JSON array')
    .action((o: { kind?: string; limit?: string; json?: boolean }) => done(listGroups(ctx(), o)));
}

export function registerKeys(program: Command, ctx: () => Context, done: Done): void {
  const keys = program.command('keys').description("the tenant's API keys (admin)");
  keys
    .command('list')
    .description('every key of the tenant: role, label, created, revoked')
    .option('--json', 'print JSON')
    .action((o: { json?: boolean }) => done(listKeys(ctx(), o)));
  keys
    .command('create')
    .description('mint a key (a member unless --admin); the key is printed once, on stdout')
    .option('--admin', 'an admin key (keys, runners, tenant policy)')
    .option('--label <label>', 'what it is for')
    .option('--json', 'print JSON')
    .action((o: { admin?: boolean; label?: string; json?: boolean }) => done(createKey(ctx(), o)));
  keys
    .command('revoke')
    .argument('<id>', 'the key id (key_…), not the key')
    .description('revoke a key: its next call is 401, a trigger it made stops firing')
    .action((id: string) => done(revokeKey(ctx(), id)));
}
