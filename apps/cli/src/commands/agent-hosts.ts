// everdict agent hosts [--json] [--operator] — the agent hosts that may hold the tenant's turns (its own and the
// shared ones), or with --operator the shared ones through the operator's door; everdict agent revoke-host <id>
// [--operator] — its next call refused, every turn it held moved by the lease rule (requeued, a parked one's
// resume lost, a last attempt failed), declined parked turns no host can resume any more failed.
import type { components } from '@everdict/client';
import type { Command } from 'commander';
import type { Context, Done } from '../context.js';
import { CliError } from '../errors.js';
import { line } from '../io.js';
import { table } from '../table.js';
import { OPERATOR_OPTION, serviceToken, sharedHint } from './operator.js';

type AgentHost = components['schemas']['AgentHost'];
type RevokedAgentHost = components['schemas']['RevokedAgentHost'];

async function listHosts(ctx: Context, o: { json?: boolean; operator?: boolean }): Promise<number> {
  const items: AgentHost[] = o.operator
    ? (
        await ctx.call<{ items: AgentHost[] }>('GET', '/internal/agents/hosts', undefined, {
          key: serviceToken(ctx),
        })
      ).items
    : ((await ctx.client.GET('/agents/hosts')).data?.items ?? []);
  if (o.json) line(ctx.io.stdout, JSON.stringify(items));
  else if (items.length === 0) line(ctx.io.stderr, 'no agent hosts');
  else
    line(
      ctx.io.stdout,
      table(
        ['host', 'name', 'state', 'scope', 'leases', 'revoked by'],
        items.map((h) => [
          h.id,
          h.name,
          h.state,
          h.shared ? 'shared' : 'tenant',
          String(h.leasesHeld),
          h.revokedBy ?? '',
        ]),
      ),
    );
  return 0;
}

async function revokeHost(ctx: Context, id: string, o: { operator?: boolean }): Promise<number> {
  let h: RevokedAgentHost;
  if (o.operator) {
    const path = `/internal/agents/hosts/${encodeURIComponent(id)}/revoke`;
    h = await ctx.call<RevokedAgentHost>('POST', path, {}, { key: serviceToken(ctx) });
  } else {
    const answer = await ctx.client
      .POST('/agents/hosts/{id}/revoke', { params: { path: { id } } })
      .catch((e: unknown) => sharedHint(e, `everdict agent revoke-host ${id}`));
    if (!answer.data)
      throw new CliError('unavailable', 'POST /agents/hosts/:id/revoke answered without a body');
    h = answer.data;
  }
  const fates = [
    h.requeued.length > 0 && `${h.requeued.length} requeued: ${h.requeued.join(' ')}`,
    h.parked.length > 0 && `${h.parked.length} parked: ${h.parked.join(' ')}`,
    h.failed.length > 0 && `${h.failed.length} failed: ${h.failed.join(' ')}`,
    h.noCompatibleHost.length > 0 &&
      `${h.noCompatibleHost.length} failed no_compatible_host: ${h.noCompatibleHost.join(' ')}`,
  ].filter(Boolean);
  line(
    ctx.io.stdout,
    `agent host ${h.id} (${h.name}) ${h.state}${fates.length ? `; turns ${fates.join('; ')}` : ''}`,
  );
  return 0;
}

export function registerAgentHosts(agent: Command, ctx: () => Context, done: Done): void {
  agent
    .command('hosts')
    .description("the agent hosts that may hold the tenant's turns: its own and the shared ones")
    .option('--json', 'print JSON')
    .option(...OPERATOR_OPTION)
    .action((o: { json?: boolean; operator?: boolean }) => done(listHosts(ctx(), o)));
  agent
    .command('revoke-host')
    .argument('<id>', 'the agent host')
    .description('its next call is refused; the turns it held requeue (admin)')
    .option(...OPERATOR_OPTION)
    .action((id: string, o: { operator?: boolean }) => done(revokeHost(ctx(), id, o)));
}
