// everdict cancel <run> [--reason TEXT] — cancel a run and its non-terminal causal descendants
// (POST /runs/:id/cancel); a run already settled is refused 409 (exit 3).
import type { Command } from 'commander';
import type { Context, Done } from '../context.js';
import { line } from '../io.js';

interface Cancelled {
  run: { id: string; status: string };
  cancelled: string[];
}

export async function cancelCommand(
  ctx: Context,
  id: string,
  o: { reason?: string; json?: boolean },
): Promise<number> {
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
    .description('cancel a run and every run it caused that has not settled')
    .argument('<run>', 'the run id')
    .option('--reason <text>', 'why (kept with the cancellation)')
    .option('--json', 'print JSON')
    .action((id: string, o: { reason?: string; json?: boolean }) => done(cancelCommand(ctx(), id, o)));
}
