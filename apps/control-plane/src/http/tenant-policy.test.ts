// The tenant policy routes on the real core: GET /tenant/policy, PATCH /tenant/policy (cascade opt-out),
// validated (400 problem+json, nothing changed), admin only, in /openapi.json — and the cascade obeys it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type TestApp, testApp } from './testing/harness.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
});
afterAll(async () => {
  await t?.close();
});

const cmd = { kind: 'command', subject: { path: 'a', image: 'i', command: ['x'] } };
const evalRun = { kind: 'eval', subject: { harness: { id: 'h', version: '1' }, caseId: 'c1' } };

describe('tenant policy routes', () => {
  it('reads the policy, refuses a bad or non-admin change without changing it, and sets the cascade opt-out', async () => {
    const before = await call(t.app, 'GET', '/tenant/policy');
    expect(before.status, JSON.stringify(before.body)).toBe(200);
    expect(before.body.cascade).toEqual({ skipKinds: [], skipCauses: [] });
    for (const body of [
      { cascade: { skipCauses: ['nobody'] } },
      { cascade: { skipKinds: ['Not A Kind'] } },
      { cascade: {}, weight: 5 },
    ]) {
      const bad = await call(t.app, 'PATCH', '/tenant/policy', { body });
      expect(bad.status, JSON.stringify(bad.body)).toBe(400);
      expect(bad.type).toContain('application/problem+json');
    }
    const member = await call(t.app, 'PATCH', '/tenant/policy', {
      key: await t.key('member'),
      body: { cascade: { skipKinds: ['eval'] } },
    });
    expect(member.status).toBe(403);
    expect((await call(t.app, 'GET', '/tenant/policy')).body).toEqual(before.body);

    const set = await call(t.app, 'PATCH', '/tenant/policy', {
      body: { cascade: { skipKinds: ['eval'], skipCauses: ['event'] } },
    });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body).toEqual({ ...before.body, cascade: { skipKinds: ['eval'], skipCauses: ['event'] } });
    expect((await call(t.app, 'GET', '/tenant/policy')).body).toEqual(set.body);
  });

  it('a cancel cascades past nothing the policy opts out', async () => {
    const create = async (body: unknown, causedBy?: string) => {
      const r = await call(t.app, 'POST', '/runs', {
        body,
        ...(causedBy ? { headers: { 'x-everdict-caused-by': causedBy } } : {}),
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return (r.body.run as { id: string }).id;
    };
    const root = await create(cmd);
    const child = await create(cmd, root);
    const grandchild = await create(cmd, child);
    const kept = await create(evalRun, root);
    const keptChild = await create(cmd, kept);
    const out = await call(t.app, 'POST', `/runs/${root}/cancel`, { body: {} });
    expect(out.status, JSON.stringify(out.body)).toBe(200);
    expect((out.body.cancelled as string[]).sort()).toEqual([root, child, grandchild].sort());
    for (const id of [kept, keptChild])
      expect((await call(t.app, 'GET', `/runs/${id}`)).body.status).toBe('queued');
  });

  it('is in /openapi.json', async () => {
    const spec = await call(t.app, 'GET', '/openapi.json', { key: null });
    const paths = spec.body.paths as Record<string, Record<string, unknown>>;
    expect(Object.keys(paths['/tenant/policy'] ?? {}).sort()).toEqual(['get', 'patch']);
    const body = JSON.stringify(paths['/tenant/policy']?.patch);
    for (const word of ['skipKinds', 'skipCauses', 'event']) expect(body).toContain(word);
  });
});
