// Tenant scoping, swept over the OpenAPI document: every operation with an `{id}` path parameter, called by
// another tenant's admin key with the ids of tenant `default`'s resources, is refused (never a 2xx), and
// tenant `default`'s resources are unchanged afterwards. Real core, PGlite.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMAND_SPEC, call, INTERNAL_TOKEN, type TestApp, testApp } from '../http/testing/harness.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
}, 300_000);
afterAll(async () => {
  await t?.close();
});

type Doc = { paths: Record<string, Record<string, unknown>> };

async function snapshot(): Promise<string> {
  const db = t.core.internals.deps.db;
  const q = async (s: ReturnType<typeof sql<Record<string, unknown>>>) =>
    JSON.stringify((await s.execute(db)).rows);
  return [
    await q(sql`SELECT id, status, updated_at FROM runs WHERE tenant_id = 'default' ORDER BY id`),
    await q(sql`SELECT * FROM run_groups WHERE tenant_id = 'default' ORDER BY id`),
    await q(sql`SELECT id, revoked_at FROM api_keys WHERE tenant_id = 'default' ORDER BY id`),
    await q(sql`SELECT * FROM subscriptions WHERE tenant_id = 'default' ORDER BY id`),
    await q(sql`SELECT * FROM agents WHERE tenant_id = 'default' ORDER BY id`),
  ].join('\n');
}

describe("another tenant's ids", () => {
  it('every {id} operation refuses them and changes nothing', async () => {
    const run = await call(t.app, 'POST', '/runs', { body: COMMAND_SPEC });
    const group = await call(t.app, 'POST', '/groups', {
      body: { kind: 'experiment', spec: COMMAND_SPEC, repeat: 2 },
    });
    const sub = await call(t.app, 'POST', '/subscriptions', {
      body: { name: 's', selector: { kind: 'run.settled' }, runSpec: COMMAND_SPEC },
    });
    const agentRun = await call(t.app, 'POST', '/internal/agent-run-events', {
      key: INTERNAL_TOKEN,
      headers: { 'x-everdict-tenant': 'default' },
      body: { event: 'started', agent: { agentId: 'sweep' } },
    });
    const key = await call(t.app, 'POST', '/api-keys', { body: { role: 'member' } });
    const agent = await call(t.app, 'POST', '/agents', { body: { name: 'a', model: 'm' } });
    const ids = [
      (run.body.run as { id: string }).id,
      (group.body.group as { id: string }).id,
      String(sub.body.id),
      String(agentRun.body.id),
      String(key.body.id),
      String((agent.body.agent as { id?: string } | undefined)?.id),
    ];
    expect(ids.every((id) => id !== 'undefined' && id.length > 0)).toBe(true);
    const before = await snapshot();
    const other = await t.tenant('sweeper');
    const doc = t.document() as Doc;
    const leaks: string[] = [];
    let tried = 0;
    for (const [path, ops] of Object.entries(doc.paths)) {
      if (!path.includes('{id}')) continue;
      for (const method of Object.keys(ops)) {
        // Service-token and runner-credential routes are not an API key's (their scoping is tested with them).
        if (path.startsWith('/internal') || path.startsWith('/runner/')) continue;
        for (const id of ids) {
          for (const body of [undefined, {}]) {
            tried += 1;
            const res = await call(
              t.app,
              method.toUpperCase(),
              path.replace('{id}', encodeURIComponent(id)),
              {
                key: other,
                ...(body === undefined || method === 'get' ? {} : { body }),
              },
            );
            if (res.status < 400 && !(method === 'get' && path === '/runs/{id}/terminal'))
              leaks.push(
                `${method.toUpperCase()} ${path} ${id} → ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`,
              );
            if (res.status >= 500) leaks.push(`${method.toUpperCase()} ${path} ${id} → ${res.status}`);
          }
        }
      }
    }
    expect(tried).toBeGreaterThan(50);
    expect(leaks).toEqual([]);
    expect(await snapshot()).toBe(before);
  }, 120_000);
});
