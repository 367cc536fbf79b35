// /metrics on the real core: the core reports admissions (API, groups, subscriptions, agent bridge all pass
// its gate) and dispatch latency; queue depth is read from the ledger at scrape time.
import { isTerminalStatus, type RunStatus } from '@everdict/run-model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, METRICS_TOKEN, type TestApp, testApp } from './testing/harness.js';

let t: TestApp;
let app: TestApp['app'];
const auth = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' };
const scrape = async (token?: string) =>
  (await app.request('/metrics', token ? { headers: { authorization: `Bearer ${token}` } } : {})).text();

beforeAll(async () => {
  t = await testApp({
    policy: { maxQueued: 3 },
    scheduler: { enabled: true, pollMs: 25 },
    metricsToken: METRICS_TOKEN,
  });
  app = t.app;
}, 300_000); // a PGlite template is made per file: minutes on a loaded 2-core machine
afterAll(async () => {
  await t?.close();
});

const post = (path: string, body: unknown) =>
  app.request(path, { method: 'POST', headers: auth, body: JSON.stringify(body) });

/** Waits (generous deadline) until the run is terminal; its final status. */
async function settled(id: string): Promise<string> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const r = await app.request(`/runs/${id}`, { headers: auth });
    const { status } = (await r.json()) as { status: RunStatus };
    if (isTerminalStatus(status) || Date.now() > deadline) return status;
    await new Promise((r) => setTimeout(r, 25));
  }
}

function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) {
      return Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return undefined;
}

describe('GET /metrics on the real core', () => {
  it('exposes admissions by outcome, dispatch latency and queue depth from the ledger', async () => {
    // Each analysis run settles before the next is posted: the queue cap (3) never sees two of them at once,
    // however slowly a loaded machine dispatches.
    for (let i = 0; i < 4; i++) {
      const r = await post('/runs', { kind: 'analysis', subject: { config: { fn: 'echo', message: 'm' } } });
      expect(r.status).toBe(201);
      expect(await settled(((await r.json()) as { run: { id: string } }).run.id)).toBe('succeeded');
    }
    // The queue is empty now: three command runs wait queued (no driver here); the fourth hits the cap (429).
    const codes: number[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await post('/runs', { kind: 'command', subject: { path: 'x', image: 'i', command: ['x'] } });
      codes.push(r.status);
    }
    expect(codes).toEqual([201, 201, 201, 429]);
    const deadline = Date.now() + 10_000;
    let text = '';
    for (;;) {
      text = await scrape(METRICS_TOKEN);
      const n = sample(text, 'everdict_dispatch_latency_seconds_count', { class: 'interactive' });
      if (n === 4 || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(sample(text, 'everdict_admissions_total', { outcome: 'admitted', kind: 'analysis' })).toBe(4);
    expect(sample(text, 'everdict_admissions_total', { outcome: 'admitted', kind: 'command' })).toBe(3);
    expect(
      sample(text, 'everdict_admissions_total', {
        outcome: 'refused_429',
        kind: 'command',
        rule: 'queue_depth',
      }),
    ).toBe(1);
    const dispatched = Object.fromEntries(
      ['interactive', 'background', 'batch'].map((c) => [
        c,
        sample(text, 'everdict_dispatch_latency_seconds_count', { class: c }) ?? 0,
      ]),
    );
    expect(Object.values(dispatched).reduce((a, b) => a + b, 0)).toBe(4);
    const sum = Object.keys(dispatched)
      .map((c) => sample(text, 'everdict_dispatch_latency_seconds_sum', { class: c }) ?? 0)
      .reduce((a, b) => a + b, 0);
    expect(sum).toBeGreaterThanOrEqual(0);
    expect(sum).toBeLessThan(4 * 10);
    const depth = ['interactive', 'background', 'batch']
      .map((c) => sample(text, 'everdict_queue_depth', { tenant: 'default', class: c }) ?? 0)
      .reduce((a, b) => a + b, 0);
    expect(depth).toBe(3);
  }, 120_000);

  it('names no tenant unless called with EVERDICT_METRICS_TOKEN: aggregates only', async () => {
    await t.tenant('secret-customer-name');
    const perTenant = await scrape(METRICS_TOKEN);
    expect(perTenant).toContain('tenant="default"');
    const byTenant = ['interactive', 'background', 'batch'].map(
      (c) => sample(perTenant, 'everdict_queue_depth', { tenant: 'default', class: c }) ?? 0,
    );
    for (const text of [await scrape(), await scrape('not-the-metrics-token-000'), await scrape(ADMIN_KEY)]) {
      expect(text).not.toMatch(/tenant="/);
      expect(text).not.toContain('default');
      expect(text).not.toContain('secret-customer-name');
      const byClass = ['interactive', 'background', 'batch'].map(
        (c) => sample(text, 'everdict_queue_depth', { class: c }) ?? 0,
      );
      expect(byClass.reduce((a, b) => a + b, 0)).toBe(byTenant.reduce((a, b) => a + b, 0));
      expect(text).toContain('everdict_admissions_total');
    }
  });
});
