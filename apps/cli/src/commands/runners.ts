// The tenant's compute, from the command line (an admin key for the changes):
//   everdict runner token — a single-use pairing token (15 min) and the `everdict-runner pair` line to use it;
//   everdict runner list — the runners that may lease the tenant's runs (its own and the shared ones);
//   everdict runner drain <id> | revoke <id> — no new leases / its next call refused and its leases requeued;
//   --operator (token, drain, revoke): a shared runner's, through the operator's door (`/internal/runners/*`) with
//     the service token (EVERDICT_INTERNAL_TOKEN; on the main job's own URL, the main job's);
//   everdict queue — where the tenant's runs wait: queued by class and kind, running, sessions, the caps, and the
//     delegated envelopes (what each may still spend).
import type { components } from '@everdict/client';
import type { Command } from 'commander';
import type { Context, Done } from '../context.js';
import { CliError } from '../errors.js';
import { line } from '../io.js';
import { age, table } from '../table.js';
import { OPERATOR_OPTION, serviceToken, sharedHint } from './operator.js';

type Runner = components['schemas']['Runner'];
type Envelope = components['schemas']['Envelope'];

async function pairingToken(ctx: Context, o: { json?: boolean; operator?: boolean }): Promise<number> {
  const t = o.operator
    ? await ctx.call<{ token: string; expiresAt: string }>(
        'POST',
        '/internal/runners/pairing-tokens',
        {},
        {
          key: serviceToken(ctx),
        },
      )
    : (await ctx.client.POST('/runners/pairing-tokens')).data;
  if (!t) throw new CliError('unavailable', 'POST /runners/pairing-tokens answered without a body');
  if (o.json) line(ctx.io.stdout, JSON.stringify(t));
  else {
    const scope = o.operator ? 'a shared runner: every tenant' : 'a runner of this tenant';
    line(ctx.io.stdout, `pairing token for ${scope} (single use, shown once, expires ${t.expiresAt}):`);
    line(ctx.io.stdout, t.token);
    line(ctx.io.stdout, '');
    line(
      ctx.io.stdout,
      `on the runner's host: everdict-runner pair ${ctx.url} ${t.token} --name <name> --slots <n>`,
    );
  }
  return 0;
}

async function listRunners(ctx: Context, o: { json?: boolean }): Promise<number> {
  const items: Runner[] = (await ctx.client.GET('/runners')).data?.items ?? [];
  if (o.json) line(ctx.io.stdout, JSON.stringify(items));
  else
    line(
      ctx.io.stdout,
      table(
        ['runner', 'name', 'state', 'scope', 'kinds', 'drivers', 'slots', 'leases', 'heartbeat'],
        items.map((r) => [
          r.id,
          r.name,
          r.state,
          r.shared ? 'shared' : 'tenant',
          r.capabilities.kinds.join(','),
          r.capabilities.drivers.join(','),
          String(r.capabilities.slots),
          String(r.leasesHeld),
          r.lastHeartbeatAt ? `${age(r.lastHeartbeatAt)} ago` : 'never',
        ]),
      ),
    );
  return 0;
}

async function changeRunner(
  ctx: Context,
  id: string,
  action: 'drain' | 'revoke',
  o: { operator?: boolean },
): Promise<number> {
  let r: Runner & { requeued?: string[] };
  if (o.operator) {
    const path = `/internal/runners/${encodeURIComponent(id)}/${action}`;
    r = await ctx.call<Runner & { requeued?: string[] }>('POST', path, {}, { key: serviceToken(ctx) });
  } else {
    const path = action === 'drain' ? '/runners/{id}/drain' : '/runners/{id}/revoke';
    // A shared runner is the operator's: the refusal says how to take that door from here.
    const answer = await ctx.client
      .POST(path, { params: { path: { id } } })
      .catch((e: unknown) => sharedHint(e, `everdict runner ${action} ${id}`));
    if (!answer.data)
      throw new CliError('unavailable', `POST /runners/:id/${action} answered without a body`);
    r = answer.data;
  }
  const requeued = r.requeued?.length
    ? `; ${r.requeued.length} lease(s) requeued: ${r.requeued.join(' ')}`
    : '';
  line(ctx.io.stdout, `runner ${r.id} (${r.name}) ${r.state}${requeued}`);
  return 0;
}

const capOf = (n: number | null) => (n === null ? '-' : String(n));

async function showQueue(ctx: Context, o: { json?: boolean }): Promise<number> {
  const [queue, listed] = await Promise.all([ctx.client.GET('/tenant/queue'), ctx.client.GET('/envelopes')]);
  const q = queue.data;
  if (!q) throw new CliError('unavailable', 'GET /tenant/queue answered without a body');
  const envelopes: Envelope[] = listed.data?.items ?? [];
  if (o.json) {
    line(ctx.io.stdout, JSON.stringify({ queue: q, envelopes }));
    return 0;
  }
  const byKind = Object.entries(q.queuedByKind)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  line(
    ctx.io.stdout,
    `queued   ${q.queued.total} of ${q.caps.maxQueued} (interactive ${q.queued.interactive}, background ${q.queued.background}, batch ${q.queued.batch})${byKind ? ` — ${byKind}` : ''}`,
  );
  line(ctx.io.stdout, `running  ${q.running} of ${q.caps.maxConcurrent}`);
  line(ctx.io.stdout, `sessions ${q.sessions} held open`);
  if (envelopes.length === 0) return 0;
  line(ctx.io.stdout, '');
  line(
    ctx.io.stdout,
    table(
      ['envelope', 'opened by', 'runs', 'usd', 'tokens', 'in flight'],
      envelopes.map((e) => [
        e.id,
        e.openedBy ?? '-',
        `${e.spent.runs}/${capOf(e.caps.runs)}`,
        `${e.spent.usd}/${capOf(e.caps.usd)}`,
        `${e.spent.tokens}/${capOf(e.caps.tokens)}`,
        `${e.inFlight}/${e.caps.inFlight}`,
      ]),
    ),
  );
  return 0;
}

export function registerRunners(program: Command, ctx: () => Context, done: Done): void {
  const runner = program.command('runner').description("the tenant's runners: pair, list, drain, revoke");
  runner
    .command('token')
    .description('a single-use pairing token (15 min) for `everdict-runner pair` (admin)')
    .option('--json', 'print JSON')
    .option(...OPERATOR_OPTION)
    .action((o: { json?: boolean; operator?: boolean }) => done(pairingToken(ctx(), o)));
  runner
    .command('list')
    .description("the runners that may lease the tenant's runs: its own and the shared ones")
    .option('--json', 'print JSON')
    .action((o: { json?: boolean }) => done(listRunners(ctx(), o)));
  runner
    .command('drain')
    .argument('<id>', 'the runner')
    .description('no new leases; what it runs finishes (admin)')
    .option(...OPERATOR_OPTION)
    .action((id: string, o: { operator?: boolean }) => done(changeRunner(ctx(), id, 'drain', o)));
  runner
    .command('revoke')
    .argument('<id>', 'the runner')
    .description('its next call is refused and its leases requeue (admin)')
    .option(...OPERATOR_OPTION)
    .action((id: string, o: { operator?: boolean }) => done(changeRunner(ctx(), id, 'revoke', o)));
  program
    .command('queue')
    .description("where the tenant's runs wait: queued by class and kind, running, sessions, caps, envelopes")
    .option('--json', 'print JSON')
    .action((o: { json?: boolean }) => done(showQueue(ctx(), o)));
}
