// A trigger's firings, read back (`GET /subscriptions/:id/firings`) on the real core: each event it matched with
// the run it created, or why none — a loop guard (self_cause), the gate (depth) — in words; newest first, paged
// by `before`; another tenant's trigger is 404, a bad query 400.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMISSION_RULES } from '../errors.js';
import { COMMAND_SPEC, call, type TestApp, testApp, until } from './testing/harness.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ scheduler: { pollMs: 50, inlineTimeoutMs: 2_000 } }); // runs execute, triggers fire
}, 300_000); // a PGlite template is made per file: minutes on a loaded 2-core machine
afterAll(async () => {
  await t?.close();
});

interface Firing {
  eventId: string;
  at: string;
  outcome: 'created' | 'refused';
  runId: string | null;
  refusal: { code: string; rule: string | null; detail: string | null } | null;
}
interface FiringPage {
  items: Firing[];
  nextBefore: string | null;
}

const echo = { kind: 'analysis', subject: { config: { fn: 'echo', args: { text: 'again' } } } };

async function trigger(body: Record<string, unknown>): Promise<string> {
  const r = await call(t.app, 'POST', '/subscriptions', { body });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.id as string;
}

async function firings(id: string, query = ''): Promise<FiringPage> {
  const r = await call(t.app, 'GET', `/subscriptions/${id}/firings${query}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as unknown as FiringPage;
}

describe('GET /subscriptions/:id/firings', () => {
  it('lists the run a firing created, then the loop guard that refused its own run, in words', async () => {
    const id = await trigger({
      name: 'again',
      selector: { kind: 'run.settled', filter: { kind: 'analysis' } },
      runSpec: echo,
    });
    const root = await call(t.app, 'POST', '/runs', { body: echo });
    expect(root.status).toBe(201);
    const rootId = (root.body.run as { id: string }).id;
    // The root settles → a run caused by it; that one settles → refused: it was this trigger's own.
    const page = await until('two firings', async () => {
      const p = await firings(id);
      return p.items.length >= 2 ? p : undefined;
    });
    expect(page.items).toHaveLength(2);
    const [refused, created] = page.items as [Firing, Firing];
    expect(created.outcome).toBe('created');
    expect(created.refusal).toBeNull();
    const caused = await call(t.app, 'GET', `/runs/${created.runId}`);
    expect((caused.body.origin as { causedByRunId: string }).causedByRunId).toBe(rootId);
    expect(refused).toMatchObject({ outcome: 'refused', runId: null });
    expect(refused.refusal).toEqual({
      code: 'self_cause',
      rule: null,
      detail: `run ${created.runId} was created by ${id}`,
    });
    expect(BigInt(refused.eventId)).toBeGreaterThan(BigInt(created.eventId));
    expect(Date.parse(refused.at)).toBeGreaterThanOrEqual(Date.parse(created.at));
    expect(page.nextBefore).toBeNull();

    // Paged newest first: one at a time, `before` the last one seen; the last page says there is no other.
    const first = await firings(id, '?limit=1');
    expect(first.items.map((f) => f.eventId)).toEqual([refused.eventId]);
    expect(first.nextBefore).toBe(refused.eventId);
    const second = await firings(id, `?limit=1&before=${first.nextBefore}`);
    expect(second.items.map((f) => f.eventId)).toEqual([created.eventId]);
    expect(second.nextBefore).toBeNull();
    expect((await firings(id, `?limit=1&before=${created.eventId}`)).items).toEqual([]);
  }, 120_000);

  it("a run the gate refuses is the gate's refusal: its code, its rule and its words", async () => {
    const id = await trigger({
      name: 'too deep',
      selector: { kind: 'run.queued', filter: { kind: 'command' } },
      runSpec: echo,
      maxDepth: 0,
    });
    const queued = await call(t.app, 'POST', '/runs', { body: COMMAND_SPEC });
    expect(queued.status).toBe(201);
    const [firing] = (
      await until('a firing', async () => {
        const p = await firings(id);
        return p.items.length > 0 ? p : undefined;
      })
    ).items as [Firing];
    expect(firing).toMatchObject({ outcome: 'refused', runId: null });
    expect(firing.refusal?.code).toBe(ADMISSION_RULES.depth.code);
    expect(firing.refusal?.rule).toBe('depth');
    expect(firing.refusal?.detail).toMatch(/depth/i);
  }, 120_000);

  it("another tenant's trigger is 404; a bad page is 400 and names the field", async () => {
    const id = await trigger({ name: 'mine', selector: { kind: 'group.scored' }, runSpec: echo });
    const theirs = await t.tenant('acme-firings');
    const other = await call(t.app, 'GET', `/subscriptions/${id}/firings`, { key: theirs });
    expect(other.status).toBe(404);
    expect(other.body.code).toBe('not_found');
    for (const q of ['?limit=0', '?limit=501', '?before=abc', '?before=-1']) {
      const r = await call(t.app, 'GET', `/subscriptions/${id}/firings${q}`);
      expect(r.status, q).toBe(400);
      expect(JSON.stringify(r.body), q).toMatch(/limit|before/);
    }
    expect(await firings(id)).toEqual({ items: [], nextBefore: null });
  }, 60_000);
});
