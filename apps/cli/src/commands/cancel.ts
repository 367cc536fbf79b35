// everdict cancel <run> [--reason TEXT] — cancel a run and its non-terminal causal descendants
// (POST /runs/:id/cancel); a run already settled is refused 409 (exit 3).
// everdict cancel <group> — a group's id (`grp_…`, a conversation's `conv_…`): every run of it that has not
// settled, each with its descendants (POST /groups/:id/cancel); a group with none left cancels nothing (exit 0).
import type { Command } from 'commander';
import type { Context, Done } from '../context.js';
import { line } from '../io.js';

interface Cancelled {
  run: { id: string; status: string };
  cancelled: string[];
}

interface CancelledGroup {
  group: { id: string; rollup: { byStatus: Record<string, number> } };
  cancelled: string[];
}

/** A group's id, as the control plane makes them: an experiment's or batch's `grp_…`, a conversation's `conv_…`. */
const isGroupId = (id: string) => /^(grp|conv)_/.test(id);

async function cancelGroup(
  ctx: Context,
  id: string,
  o: { reason?: string; json?: boolean },
): Promise<number> {
  const result = await ctx.call<CancelledGroup>('POST', `/groups/${encodeURIComponent(id)}/cancel`, {
    ...(o.reason === undefined ? {} : { reason: o.reason }),
  });
  if (o.json) line(ctx.io.stdout, JSON.stringify(result));
  else {
    const n = result.cancelled.length;
    line(
      ctx.io.stdout,
      `${result.group.id}: ${n === 0 ? 'no run left to cancel' : `cancelled ${n} run${n === 1 ? '' : 's'}`} (${JSON.stringify(result.group.rollup.byStatus)})`,
    );
    for (const r of result.cancelled) line(ctx.io.stdout, `  ${r} cancelled`);
  }
  return 0;
}

export async function cancelCommand(
  ctx: Context,
  id: string,
  o: { reason?: string; json?: boolean },
): Promise<number> {
  if (isGroupId(id)) return cancelGroup(ctx, id, o);
  const result = await ctx.call<Cancelled>('POST', `/runs/${encodeURIComponent(id)}/cancel`, {
    ...(o.reason === undefined ? {} : { reason: o.reason }),
  });
  if (o.json) line(ctx.io.stdout, JSON.stringify(result));
  else {
    const descendants = result.cancelled.filter((r) => r !== result.run.id);
    line(
      ctx.io.stdout,
      `${result.run.id} ${result.run.status}${descendants.length ? ` with ${descendants.length} descendant${descendants.length === 1 ? '' : 's'}` : ''}`,
    );
    for (const r of descendants) line(ctx.io.stdout, `  ${r} cancelled`);
  }
  return 0;
}

export function registerCancel(program: Command, ctx: () => Context, done: Done): void {
  program
    .command('cancel')
    .description(
      'cancel a run and every run it caused that has not settled; or a group (grp_…, conv_…): every run of it',
    )
    .argument('<run>', 'the run id, or a group id')
    .option('--reason <text>', 'why (kept with the cancellation)')
    .option('--json', 'print JSON')
    .action((id: string, o: { reason?: string; json?: boolean }) => done(cancelCommand(ctx(), id, o)));
}
