// The head log's routes (issue 18 §2), answering @everdict/headlog's wire contract (`wire.ts`) — the same
// objects its testing log server answers, so `everdict-runrecord verify --log` / `check-group` and
// `everdict-witness` read the real control plane unchanged. Every body is built by headlog's builders and
// checked against its schema. `/log/*` is public (leaves carry only hashed ids); the run and group routes
// sit under the API-key prefixes and read the caller's tenant only.
//
//   GET  /log/key · /log/sth · /log/sth/:size · /log/proof/inclusion · /log/proof/consistency
//   POST /log/cosignatures
//   GET  /runs/:id/log · /groups/:id/log · /groups/:id/proof   (API key; `?size=` picks a signed tree head)
//   GET  /runners/:id/audit                                    (API key; the runner key's audit chain)
import {
  consistencyProofWire,
  consistencyQuery,
  cosignatureAcceptedWire,
  cosignatureSubmissionWire,
  cosignedTreeHeadToWire,
  groupProofWire,
  idHash,
  inclusionProofWire,
  inclusionQuery,
  loggedLeafToWire,
  loggedLeavesWire,
  logKeyToWire,
  parseTreeHeadJson,
  sizeParam,
  treeSizeQuery,
} from '@everdict/headlog';
import { Hono } from 'hono';
import type { z } from 'zod';
import type { Db } from '../db/tx.js';
import { ControlPlaneError } from '../errors.js';
import { runnerAudit } from '../log/audit-chain.js';
import type { HeadLog } from '../log/head-log.js';
import type { AppEnv } from './env.js';

function parse<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const r = schema.safeParse(value);
  if (!r.success) throw new ControlPlaneError('validation_failed', `${what} is not the route's`);
  return r.data;
}

async function owned(db: Db, table: 'runs' | 'run_groups', tenantId: string, id: string): Promise<void> {
  const row = await db
    .selectFrom(table)
    .select('id')
    .where('id', '=', id)
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  if (!row) throw new ControlPlaneError('not_found', `no ${table === 'runs' ? 'run' : 'group'} ${id}`);
}

export function logRoutes(log: HeadLog): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const db = log.db;
  const cosigned = async (size?: number) => {
    const sth = size === undefined ? await log.latest() : await log.at(size);
    return cosignedTreeHeadToWire(sth, await log.cosignatures(sth.treeSize));
  };

  app.get('/log/key', (c) => c.json(logKeyToWire(log.publicKey, log.logId)));
  app.get('/log/sth', async (c) => c.json(await cosigned()));
  app.get('/log/sth/:size', async (c) =>
    c.json(await cosigned(parse(sizeParam, c.req.param('size'), 'size'))),
  );
  app.get('/log/proof/inclusion', async (c) => {
    const q = parse(inclusionQuery, c.req.query(), 'the query');
    const obj = await log.inclusion(q.index, q.size);
    inclusionProofWire.parse(obj); // checked, answered as built (the schema's output is bytes)
    return c.json(obj);
  });
  app.get('/log/proof/consistency', async (c) => {
    const q = parse(consistencyQuery, c.req.query(), 'the query');
    const obj = await log.consistency(q.from, q.to);
    consistencyProofWire.parse(obj);
    return c.json(obj);
  });
  app.post('/log/cosignatures', async (c) => {
    const body = parse(cosignatureSubmissionWire, await c.req.json(), 'the body');
    let sth: ReturnType<typeof parseTreeHeadJson>;
    try {
      sth = parseTreeHeadJson(body.sth);
    } catch {
      throw new ControlPlaneError('validation_failed', 'the body does not name a tree head');
    }
    const n = await log.cosign(sth, body.cosignature);
    return c.json(cosignatureAcceptedWire.parse({ tree_size: String(sth.treeSize), cosignatures: n }), 201);
  });

  const leavesBody = async (
    by: { tenantId: string; runId: string } | { tenantId: string; groupId: string },
    size: number | undefined,
  ) => {
    const r = await log.leaves(by, size);
    return {
      sth: cosignedTreeHeadToWire(r.sth, r.cosignatures),
      leaves: r.leaves.map((l) => loggedLeafToWire(l)),
    };
  };
  app.get('/runs/:id/log', async (c) => {
    const { tenantId } = c.get('principal');
    const runId = c.req.param('id');
    const q = parse(treeSizeQuery, c.req.query(), 'the query');
    await owned(db, 'runs', tenantId, runId);
    return c.json(loggedLeavesWire.parse(await leavesBody({ tenantId, runId }, q.size)));
  });
  app.get('/groups/:id/:view{log|proof}', async (c) => {
    const { tenantId } = c.get('principal');
    const groupId = c.req.param('id');
    const q = parse(treeSizeQuery, c.req.query(), 'the query');
    await owned(db, 'run_groups', tenantId, groupId);
    const body = await leavesBody({ tenantId, groupId }, q.size);
    return c.json(
      c.req.param('view') === 'log'
        ? loggedLeavesWire.parse(body)
        : groupProofWire.parse({ group_hash: idHash(groupId), ...body }),
    );
  });
  // The runner key's audit chain (log/audit-chain.ts): a runner of the caller's tenant, or a shared one.
  app.get('/runners/:id/audit', async (c) =>
    c.json(await runnerAudit(db, c.get('principal'), c.req.param('id'))),
  );
  return app;
}
