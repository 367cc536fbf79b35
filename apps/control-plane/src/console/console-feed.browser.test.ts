// The console's live feed and what a long session keeps, in headless Chromium against the real app on a real
// core (scheduler off: runs stay queued): the feed is subscribed before the runs are listed (a run created in
// between is shown; a feed that never gets ready does not leave the page empty); a revoked key stops the feed
// and the detail's streams and says so; a dropped feed is retried with a growing backoff and a 401 on
// reconnect stops it; a refused saved key is forgotten with the reason shown, an unreachable control plane
// keeps it; a busy tenant's page keeps its newest 500 runs; the facts pane keeps its last 400 lines and shows
// times in the viewer's time zone; the trajectory pane follows a live run past the stream's page of 10,000
// events; a cut facts stream is reopened after the last fact shown; a run's re-read that answers late never
// replaces a newer one.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, listen, login } from '../../test/console-browser.js';
import { COMMAND_SPEC, call, type TestApp, testApp } from '../http/testing/harness.js';

let t: TestApp;
let server: { base: string; close(): Promise<void> };
let base = '';
let browser: Browser;
let context: BrowserContext | undefined;

/** A fresh page in its own context (its own sessionStorage); closed after the test. */
async function freshPage(opts: { timezoneId?: string } = {}): Promise<Page> {
  context = await browser.newContext(opts);
  return context.newPage();
}

/** A new member key of tenant `default`, and its id (to revoke it). */
async function memberKey(): Promise<{ key: string; id: string }> {
  const made = await call(t.app, 'POST', '/api-keys', { body: { role: 'member' } });
  expect(made.status).toBe(201);
  return { key: String(made.body.key), id: String(made.body.id) };
}

async function queuedRun(key?: string): Promise<string> {
  const r = await call(t.app, 'POST', '/runs', { body: COMMAND_SPEC, ...(key ? { key } : {}) });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return (r.body.run as { id: string }).id;
}

/** Types the key and connects, without waiting for the feed (which the test may be holding). */
async function submitKey(p: Page, key: string): Promise<void> {
  await p.goto(`${base}/console`);
  await p.fill('#key', key);
  await p.click('#login-form button[type=submit]');
}

describe('console: the live feed and a long session (headless Chromium)', () => {
  beforeAll(async () => {
    browser = await launchChromium();
    t = await testApp({ heartbeatMs: 1000 });
    server = await listen(t.app.fetch);
    base = server.base;
  }, 300_000);

  afterEach(async () => {
    await context?.close();
    context = undefined;
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await t?.close();
  });

  it('subscribes to the feed before it lists the runs: a run created in between is shown', async () => {
    const p = await freshPage();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    let asked: () => void = () => undefined;
    const feedAsked = new Promise<void>((r) => (asked = r));
    let held = false;
    await p.route('**/console/feed*', async (route) => {
      if (!held) {
        held = true;
        asked();
        await gate;
      }
      await route.continue();
    });
    await submitKey(p, (await memberKey()).key);
    await feedAsked;
    const id = await queuedRun(); // its only fact is recorded before the feed subscribes
    release();
    await p.waitForSelector('#conn.live');
    await p.locator(`#rows [data-run="${id}"]`).waitFor({ timeout: 30_000 });
  });

  it('lists the runs anyway when the feed never gets ready (a proxy buffering it)', async () => {
    const p = await freshPage();
    const run = await queuedRun();
    let release: () => void = () => undefined;
    const never = new Promise<void>((r) => (release = r));
    await p.route('**/console/feed*', async (route) => {
      await never;
      await route.abort();
    });
    await submitKey(p, (await memberKey()).key);
    await p.locator(`#rows [data-run="${run}"]`).waitFor({ timeout: 30_000 });
    expect(await p.textContent('#conn')).toBe('offline');
    release();
  });

  it("a revoked key stops the feed and the detail's streams, and the page says so", async () => {
    const p = await freshPage();
    const { key, id: keyId } = await memberKey();
    await login(p, base, key);
    const run = await queuedRun();
    await p.locator(`#rows [data-run="${run}"]`).click();
    await expect.poll(() => p.textContent('#d-facts'), { timeout: 30_000 }).toContain('run.queued');
    expect((await call(t.app, 'POST', `/api-keys/${keyId}/revoke`)).status).toBe(200);
    await expect.poll(() => p.textContent('#conn'), { timeout: 30_000 }).toBe('key refused');
    expect(await p.textContent('#notice')).toMatch(/401 unauthorized: the API key was revoked/);
    expect(await p.isVisible('#notice')).toBe(true);
    await expect
      .poll(() => p.textContent('#d-facts'), { timeout: 30_000 })
      .toContain('(unauthorized: the API key was revoked)');
  });

  it('retries a dropped feed with a growing backoff, and a 401 on reconnect stops it', async () => {
    const p = await freshPage();
    const { key, id: keyId } = await memberKey();
    const run = await queuedRun();
    const attempts: number[] = [];
    await p.route('**/console/feed*', (route) => {
      attempts.push(Date.now());
      return route.abort('connectionrefused');
    });
    await submitKey(p, key);
    // The runs are listed while the feed is down, and the status says what it waits for.
    await p.locator(`#rows [data-run="${run}"]`).waitFor({ timeout: 30_000 });
    await expect.poll(() => attempts.length, { timeout: 60_000 }).toBeGreaterThanOrEqual(4);
    expect(await p.textContent('#conn')).toMatch(/^reconnecting in \d+ s \(network\)$/);
    const gaps = attempts.slice(1, 4).map((at, i) => at - (attempts[i] ?? 0));
    // 1 s, 2 s, 4 s (each jittered to 50–100 %): the third wait is longer than the first by half at least.
    expect(gaps[2]).toBeGreaterThan((gaps[0] ?? 0) * 1.5);
    // Revoked meanwhile: the next attempt reaches the control plane, is answered 401, and the page stops.
    expect((await call(t.app, 'POST', `/api-keys/${keyId}/revoke`)).status).toBe(200);
    await p.unroute('**/console/feed*');
    await expect.poll(() => p.textContent('#conn'), { timeout: 60_000 }).toBe('key refused');
    expect(await p.textContent('#notice')).toMatch(/^The API key was refused \(401 unauthorized/);
  });

  it('a refused saved key is forgotten with the reason shown; an unreachable control plane keeps it', async () => {
    const p = await freshPage();
    const { key, id: keyId } = await memberKey();
    await login(p, base, key);
    // Unreachable on reload: the key is kept for the next one, and the login says why it is shown.
    await p.route('**/runs?limit=1', (route) => route.abort('connectionrefused'));
    await p.reload();
    await expect.poll(() => p.textContent('#login-error'), { timeout: 30_000 }).toMatch(/^0 network/);
    expect(await p.evaluate<string | null>("sessionStorage.getItem('everdict.key')")).toBe(key);
    await p.unroute('**/runs?limit=1');
    // Revoked, then reloaded: refused, forgotten, and said.
    expect((await call(t.app, 'POST', `/api-keys/${keyId}/revoke`)).status).toBe(200);
    await p.reload();
    await expect.poll(() => p.textContent('#login-error'), { timeout: 30_000 }).toMatch(/^401 unauthorized/);
    expect(await p.isVisible('#login-error')).toBe(true);
    expect(await p.evaluate<string | null>("sessionStorage.getItem('everdict.key')")).toBeNull();
    expect(await p.inputValue('#key')).toBe('');
  });

  it("a busy tenant's page keeps its newest 500 runs", async () => {
    const key = await t.tenant('busy-console');
    const p = await freshPage();
    await login(p, base, key);
    expect(await p.inputValue('#key')).toBe(''); // the key is not left in the login form
    const ids: string[] = [];
    for (let i = 0; i < 560; i += 20) {
      const batch = await Promise.all(Array.from({ length: 20 }, () => queuedRun(key)));
      ids.push(...batch);
    }
    const newest = ids.at(-1) ?? '';
    await p.locator(`#rows [data-run="${newest}"]`).waitFor({ timeout: 120_000 });
    await expect.poll(() => p.textContent('#count'), { timeout: 60_000 }).toBe('(newest 500)');
    expect(await p.locator('#rows .row').count()).toBe(500);
    expect(await p.locator(`#rows [data-run="${ids[0]}"]`).count()).toBe(0);
  });

  it("the facts pane shows the viewer's local times and keeps its last 400 lines", async () => {
    const p = await freshPage({ timezoneId: 'Asia/Kolkata' }); // UTC+05:30 all year
    await login(p, base, (await memberKey()).key);
    const run = await queuedRun();
    const facts = await call(t.app, 'GET', `/runs/${run}/events`);
    const at = (facts.body.items as { kind: string; at: string }[]).find((f) => f.kind === 'run.queued')?.at;
    expect(at).toBeDefined();
    const local = new Date(Date.parse(at ?? '') + 5.5 * 3600_000).toISOString().slice(11, 23);
    await p.locator(`#rows [data-run="${run}"]`).click();
    await expect.poll(() => p.textContent('#d-facts'), { timeout: 30_000 }).toContain(`${local} run.queued`);
    await p.keyboard.press('Escape');
    // A run with a thousand facts (its stream served to the page as the control plane would write it).
    const many = await queuedRun();
    const body = `${Array.from(
      { length: 1000 },
      (_, i) =>
        `id: ${i + 1}\nevent: run.note\ndata: ${JSON.stringify({ id: String(i + 1), kind: `run.note${i}`, at })}\n\n`,
    ).join('')}event: end\ndata: {}\n\n`;
    await p.route(`**/runs/${many}/events`, (route) =>
      route.fulfill({ status: 200, headers: { 'content-type': 'text/event-stream' }, body }),
    );
    await p.locator(`#rows [data-run="${many}"]`).click();
    await expect.poll(() => p.textContent('#d-facts'), { timeout: 30_000 }).toContain('run.note999\n');
    const lines = ((await p.textContent('#d-facts')) ?? '').split('\n').filter(Boolean);
    expect(lines.length).toBe(400);
    expect(lines[0]).toContain('run.note600');
  });
  it("the trajectory pane stays live past the stream's page of 10,000 events", async () => {
    const p = await freshPage();
    await login(p, base, (await memberKey()).key);
    const run = await queuedRun();
    // 10,050 spans exported into the live run's trajectory (OTLP/HTTP JSON, in bodies under the body limit).
    const total = 10_050;
    const now = BigInt(Date.now()) * 1_000_000n;
    for (let from = 0; from < total; from += 150) {
      const spans = Array.from({ length: Math.min(150, total - from) }, (_, j) => from + j).map((i) => ({
        traceId: '0af7651916cd43dd8448eb211c80319c',
        spanId: `b7ad6b7169${String(i + 1).padStart(6, '0')}`,
        name: `step-${i + 1}`,
        kind: 1,
        startTimeUnixNano: String(now + BigInt(i) * 1_000_000n),
        endTimeUnixNano: String(now + BigInt(i + 1) * 1_000_000n),
        attributes: [],
        status: {},
      }));
      const r = await call(t.app, 'POST', '/v1/traces', {
        body: {
          resourceSpans: [
            {
              resource: { attributes: [{ key: 'everdict.run_id', value: { stringValue: run } }] },
              scopeSpans: [{ scope: { name: 'console-test' }, spans }],
            },
          ],
        },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    await p.locator(`#rows [data-run="${run}"]`).click();
    // The last span shown, or the pane stopped at the page's end.
    await expect
      .poll(
        async () => {
          const state = (await p.textContent('#d-traj-state')) ?? '';
          const text = (await p.textContent('#d-traj')) ?? '';
          return text.includes(`"step-${total}"`) || /limit/.test(state) ? 'settled' : 'waiting';
        },
        { timeout: 120_000, interval: 250 },
      )
      .toBe('settled');
    expect(await p.textContent('#d-traj-state')).toBe('live');
    const lines = ((await p.textContent('#d-traj')) ?? '').split('\n').filter(Boolean);
    expect(lines.length).toBe(400); // the pane keeps its last 400
    expect(lines.at(-1)).toContain(`"step-${total}"`);
    expect(lines[0]).toContain(`"step-${total - 399}"`); // nothing twice, nothing skipped at the page's end
  });

  it('a cut facts stream is reopened after the last fact shown (after=), nothing twice', async () => {
    const p = await freshPage();
    await login(p, base, (await memberKey()).key);
    const run = await queuedRun();
    const at = new Date().toISOString();
    const fact = (i: number) =>
      `id: ${i}\nevent: run.note\ndata: ${JSON.stringify({ id: String(i), kind: `run.note${i}`, at })}\n\n`;
    const asked: string[] = [];
    await p.route(`**/runs/${run}/events**`, (route) => {
      const url = route.request().url();
      asked.push(new URL(url).search);
      // First connection: three facts, then the connection ends without `end` (a proxy cut it).
      const body =
        asked.length === 1
          ? [1, 2, 3].map(fact).join('')
          : `${[4, 5].map(fact).join('')}event: end\ndata: {}\n\n`;
      return route.fulfill({ status: 200, headers: { 'content-type': 'text/event-stream' }, body });
    });
    await p.locator(`#rows [data-run="${run}"]`).click();
    await expect.poll(() => p.textContent('#d-facts'), { timeout: 60_000 }).toContain('run.note5\n');
    const notes = ((await p.textContent('#d-facts')) ?? '').match(/run\.note\d+/g);
    expect(notes).toEqual(['run.note1', 'run.note2', 'run.note3', 'run.note4', 'run.note5']);
    expect(asked).toEqual(['', '?after=3']);
  });
  it("a run's re-read answering after a newer one does not put the older status back", async () => {
    const p = await freshPage();
    await login(p, base, (await memberKey()).key);
    // The first re-read of the run (the page reads it when its `run.queued` fact arrives) is held back until a
    // later re-read (after the cancel) has answered.
    let runId = '';
    let held: (() => Promise<void>) | undefined;
    await p.route(/\/runs\/run_[0-9a-z]+$/, async (route) => {
      const answer = await route.fetch();
      if (runId && route.request().url().endsWith(`/runs/${runId}`) && held === undefined) {
        held = () => route.fulfill({ response: answer });
        return;
      }
      await route.fulfill({ response: answer });
    });
    runId = await queuedRun();
    await expect.poll(() => held !== undefined, { timeout: 30_000 }).toBe(true);
    expect((await call(t.app, 'POST', `/runs/${runId}/cancel`)).status).toBe(200);
    const badge = p.locator(`#rows [data-run="${runId}"] [data-status]`);
    await expect.poll(() => badge.getAttribute('data-status'), { timeout: 30_000 }).toBe('cancelled');
    await held?.();
    // Every flush has answered (the held one included): the row still says what the newest read said.
    await expect
      .poll(() => p.evaluate<string | undefined>('document.body.dataset.flushing'), { timeout: 30_000 })
      .toBe('0');
    expect(await badge.getAttribute('data-status')).toBe('cancelled');
  });
});
