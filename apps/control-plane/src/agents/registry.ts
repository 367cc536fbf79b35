// The agent registry: an agent and its versions. A change to its behaviour (model, prompt, tools, envelope,
// price, step limit) is a new row of agent_versions; a turn names the version it ran (its run subject's
// `agentVersion`), so the record of an old turn keeps meaning what it meant. `enabled` is held by the gate
// too (admission's adm_agents): a disabled agent is refused at activation (409, rule `agent_disabled`),
// whichever door the activation came through — a conversation message or a subscription's event.
import { PgAdmissionStore } from '../admission-store/sql/store.js';
import { iso, json } from '../db/numeric.js';
import type { Executor, Tx } from '../db/tx.js';
import { withTx } from '../db/tx.js';
import { notFound } from '../errors.js';
import { asControlPlaneError } from '../services/boundary.js';
import type { Deps } from '../services/context.js';
import type { Principal } from '../services/types.js';
import {
  AgentBehaviour,
  type AgentView,
  CreateAgentInput,
  PatchAgentInput,
  type TurnLeaseView,
} from './schemas.js';

export interface AgentRow {
  tenant_id: string;
  id: string;
  name: string;
  version: number;
  enabled: boolean;
  created_by: string;
  created_at: Date;
  updated_at: Date;
}

function viewOf(row: AgentRow, behaviour: AgentBehaviour): AgentView {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    name: row.name,
    version: row.version,
    enabled: row.enabled,
    ...behaviour,
    createdBy: row.created_by,
    createdAt: iso(row.created_at) ?? '',
    updatedAt: iso(row.updated_at) ?? '',
  };
}

/** The behaviour of one version (a stored spec that no longer parses is a defect: it throws). */
export async function behaviourOf(
  ex: Executor,
  tenant: string,
  agentId: string,
  version: number,
): Promise<AgentBehaviour> {
  const v = await ex
    .selectFrom('agent_versions')
    .select('spec')
    .where('tenant_id', '=', tenant)
    .where('agent_id', '=', agentId)
    .where('version', '=', version)
    .executeTakeFirst();
  if (!v) throw notFound('agent version', `${agentId}@${version}`);
  return AgentBehaviour.parse(v.spec);
}

export async function findAgent(ex: Executor, tenant: string, agentId: string): Promise<AgentRow | null> {
  const row = await ex
    .selectFrom('agents')
    .selectAll()
    .where('tenant_id', '=', tenant)
    .where('id', '=', agentId)
    .executeTakeFirst();
  return (row as AgentRow | undefined) ?? null;
}

/** The agent spec a lease hands the agent service, for the version the turn names. */
export async function leaseAgentOf(
  ex: Executor,
  tenant: string,
  agentId: string,
  version: number,
): Promise<TurnLeaseView['agent']> {
  const row = await findAgent(ex, tenant, agentId);
  if (!row) throw notFound('agent', agentId);
  const b = await behaviourOf(ex, tenant, agentId, version);
  return {
    id: agentId,
    version: String(version),
    name: row.name,
    model: b.model,
    systemPrompt: b.systemPrompt,
    tools: [...b.tools],
    envelope: b.envelope,
    enabled: row.enabled,
    ...(b.pricing ? { pricing: b.pricing } : {}),
    maxStepsPerInterval: b.maxStepsPerInterval,
  };
}

const sameBehaviour = (a: AgentBehaviour, b: AgentBehaviour) =>
  JSON.stringify(AgentBehaviour.parse(a)) === JSON.stringify(AgentBehaviour.parse(b));

async function insertVersion(tx: Tx, deps: Deps, p: Principal, id: string, v: number, b: AgentBehaviour) {
  await tx
    .insertInto('agent_versions')
    .values({
      tenant_id: p.tenantId,
      agent_id: id,
      version: v,
      spec: json(b),
      created_by: p.actor,
      created_at: deps.clock(),
    })
    .execute();
}

export function agentRegistry(deps: Deps) {
  return {
    async create(p: Principal, raw: unknown): Promise<AgentView> {
      const input = asControlPlaneError(() => CreateAgentInput.parse(raw));
      const { name, enabled, ...rest } = input;
      const behaviour = AgentBehaviour.parse(rest);
      return withTx(deps.db, async (tx) => {
        const id = deps.ids('agent');
        const now = deps.clock();
        const row = (await tx
          .insertInto('agents')
          .values({
            tenant_id: p.tenantId,
            id,
            name,
            version: 1,
            enabled,
            created_by: p.actor,
            created_at: now,
            updated_at: now,
          })
          .returningAll()
          .executeTakeFirstOrThrow()) as AgentRow;
        await insertVersion(tx, deps, p, id, 1, behaviour);
        await new PgAdmissionStore(tx).setAgentEnabled(p.tenantId, id, enabled);
        return viewOf(row, behaviour);
      });
    },

    /** A behaviour change makes version n+1; `name` / `enabled` alone change the agent, not its version. */
    async patch(p: Principal, agentId: string, raw: unknown): Promise<AgentView> {
      const input = asControlPlaneError(() => PatchAgentInput.parse(raw));
      return withTx(deps.db, async (tx) => {
        const row = (await tx
          .selectFrom('agents')
          .selectAll()
          .where('tenant_id', '=', p.tenantId)
          .where('id', '=', agentId)
          .forUpdate()
          .executeTakeFirst()) as AgentRow | undefined;
        if (!row) throw notFound('agent', agentId);
        const current = await behaviourOf(tx, p.tenantId, agentId, row.version);
        const { pricing, ...restCurrent } = current;
        const next = AgentBehaviour.parse({
          ...restCurrent,
          ...(input.model !== undefined ? { model: input.model } : {}),
          ...(input.systemPrompt !== undefined ? { systemPrompt: input.systemPrompt } : {}),
          ...(input.tools !== undefined ? { tools: input.tools } : {}),
          ...(input.envelope !== undefined ? { envelope: input.envelope } : {}),
          ...(input.maxStepsPerInterval !== undefined
            ? { maxStepsPerInterval: input.maxStepsPerInterval }
            : {}),
          ...(input.pricing === null
            ? {}
            : input.pricing !== undefined
              ? { pricing: input.pricing }
              : pricing
                ? { pricing }
                : {}),
        });
        const version = sameBehaviour(current, next) ? row.version : row.version + 1;
        if (version !== row.version) await insertVersion(tx, deps, p, agentId, version, next);
        const enabled = input.enabled ?? row.enabled;
        const updated = (await tx
          .updateTable('agents')
          .set({ name: input.name ?? row.name, version, enabled, updated_at: deps.clock() })
          .where('tenant_id', '=', p.tenantId)
          .where('id', '=', agentId)
          .returningAll()
          .executeTakeFirstOrThrow()) as AgentRow;
        if (enabled !== row.enabled)
          await new PgAdmissionStore(tx).setAgentEnabled(p.tenantId, agentId, enabled);
        return viewOf(updated, next);
      });
    },

    async get(p: Principal, agentId: string): Promise<AgentView> {
      const row = await findAgent(deps.db, p.tenantId, agentId);
      if (!row) throw notFound('agent', agentId);
      return viewOf(row, await behaviourOf(deps.db, p.tenantId, agentId, row.version));
    },

    async list(p: Principal): Promise<AgentView[]> {
      const rows = (await deps.db
        .selectFrom('agents')
        .selectAll()
        .where('tenant_id', '=', p.tenantId)
        .orderBy('created_at')
        .orderBy('id')
        .limit(1000)
        .execute()) as AgentRow[];
      return Promise.all(
        rows.map(async (r) => viewOf(r, await behaviourOf(deps.db, p.tenantId, r.id, r.version))),
      );
    },
  };
}
