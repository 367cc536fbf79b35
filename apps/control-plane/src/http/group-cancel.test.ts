// Cancelling a group (`POST /groups/:id/cancel`) on the real core: every run of it that has not settled is
// cancelled as `POST /runs/:id/cancel` cancels one — its causal descendants too —, a run already settled is left
// as it is, the answer lists every id cancelled; again, it cancels nothing; another tenant's group is 404.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMAND_SPEC, call, type TestApp, testApp } from './testing/harness.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp(); // no scheduler: command runs stay queued
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const status = async (id: string) => (await call(t.app, 'GET', `/runs/${id}`)).body.status;

describe('POST /groups/:id/cancel', () => {
  it("cancels the group's unsettled runs and their descendants, leaves a settled one; again, nothing", async () => {
    const created = await call(t.app, 'POST', '/groups', {
      body: { kind: 'experiment', spec: COMMAND_SPEC, repeat: 4 },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const groupId = (created.body.group as { id: string }).id;
    const runs = (created.body.runs as { id: string }[]).map((r) => r.id).sort();
    // One settled before (cancelled on its own), one with a run it caused.
    const [first, second] = runs as [string, string];
    expect((await call(t.app, 'POST', `/runs/${first}/cancel`)).status).toBe(200);
    const child = await call(t.app, 'POST', '/runs', {
      body: COMMAND_SPEC,
      headers: { 'x-everdict-caused-by': second },
    });
    expect(child.status, JSON.stringify(child.body)).toBe(201);
    const childId = (child.body.run as { id: string }).id;
    const bystander = await call(t.app, 'POST', '/runs', { body: COMMAND_SPEC });
    const bystanderId = (bystander.body.run as { id: string }).id;

    const r = await call(t.app, 'POST', `/groups/${groupId}/cancel`, { body: { reason: 'wrong dataset' } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect((r.body.cancelled as string[]).sort()).toEqual([...runs.slice(1), childId].sort());
    const group = r.body.group as {
      id: string;
      rollup: { byStatus: Record<string, number>; status: string };
    };
    expect(group.id).toBe(groupId);
    expect(group.rollup.byStatus).toEqual({ cancelled: 4 });
    for (const id of [...runs, childId]) expect(await status(id), id).toBe('cancelled');
    expect(await status(bystanderId)).toBe('queued'); // not of the group, not caused by it
    const facts = await call(t.app, 'GET', `/runs/${runs[2]}/events`);
    expect(JSON.stringify(facts.body)).toContain('wrong dataset');

    const again = await call(t.app, 'POST', `/groups/${groupId}/cancel`);
    expect(again.status).toBe(200);
    expect(again.body.cancelled).toEqual([]);
  });

  it("another tenant's group, or none, is 404 and cancels nothing", async () => {
    const created = await call(t.app, 'POST', '/groups', {
      body: { kind: 'batch', spec: COMMAND_SPEC, repeat: 2 },
    });
    const groupId = (created.body.group as { id: string }).id;
    const theirs = await t.tenant('acme-group-cancel');
    const other = await call(t.app, 'POST', `/groups/${groupId}/cancel`, { key: theirs });
    expect(other.status).toBe(404);
    expect(other.body.code).toBe('not_found');
    expect((await call(t.app, 'POST', '/groups/grp_nope/cancel')).status).toBe(404);
    for (const run of created.body.runs as { id: string }[]) expect(await status(run.id)).toBe('queued');
  });
});
