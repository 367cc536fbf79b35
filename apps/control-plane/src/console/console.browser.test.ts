// The activity console in headless Chromium (Debian's `chromium`, driven by playwright-core) against the
// real app on a real core: runs created through the API appear and update live, a group collapses into one
// row, a held-open session shows its TTL, the detail shows the record's verdict, a refused create shows the
// refusal (and creates nothing), the keyboard drives it, and neither 1280×800 nor 390×844 scrolls sideways.
// Screenshots go to .test-results/screenshots/ (git-ignored; the root README's quickstart links them).
// The page is guarded (test/console-browser.ts `guardPage`): a file of it that does not load fails the test at
// once, naming the file, instead of leaving every wait to run out.
import { readFileSync } from 'node:fs';
import { readTar } from '@everdict/placement';
import { encodeAttestationBody } from '@everdict/runrecord';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  DESKTOP,
  guardPage,
  launchChromium,
  listen,
  login,
  type PageGuard,
  PHONE,
  shot,
  sideScroll,
  WAIT_MS,
} from '../../test/console-browser.js';
import { ADMIN_KEY, call, type TestApp, testApp, until } from '../http/testing/harness.js';
import {
  COMMAND_CAPS,
  leaseRuns,
  pairTestRunner,
  signTestInterval,
  uploadTestArtifact,
} from '../http/testing/runners.js';

let t: TestApp;
let server: { base: string; close(): Promise<void> };
let base = '';
let browser: Browser;
let page: Page;
let guard: PageGuard | undefined;

const sleepRun = (ms: number) => ({ kind: 'analysis', subject: { config: { fn: 'sleep', ms } } });

describe('activity console (headless Chromium)', () => {
  beforeAll(async () => {
    // Never skipped: without Chromium this suite fails, saying how to get it (.ci/run installs it).
    browser = await launchChromium();
    t = await testApp({ scheduler: { enabled: true, pollMs: 25 }, heartbeatMs: 1000 });
    server = await listen(t.app.fetch);
    base = server.base;
    page = await browser.newPage({ viewport: DESKTOP });
    guard = guardPage(page);
  }, 300_000);

  // A page that broke in an earlier test fails the later ones at once, saying why.
  beforeEach(() => guard?.check());

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await t?.close();
  });

  it('asks for the key, refuses a wrong one, keeps a right one in sessionStorage', async () => {
    await page.goto(`${base}/console`);
    await page.fill('#key', 'evd_not_a_key_0123456789');
    await page.click('#login-form button[type=submit]');
    await expect.poll(() => page.textContent('#login-error')).toMatch(/401 unauthorized/);
    await page.fill('#key', ADMIN_KEY);
    await page.click('#login-form button[type=submit]');
    await page.waitForSelector('#conn.live');
    expect(await page.evaluate<string | null>("sessionStorage.getItem('everdict.key')")).toBe(ADMIN_KEY);
  });

  it('shows runs created through the API and updates them live', async () => {
    const created = await call(t.app, 'POST', '/runs', { body: sleepRun(1500) });
    expect(created.status).toBe(201);
    const id = (created.body.run as { id: string }).id;
    const badge = page.locator(`[data-run="${id}"] .badge`);
    await badge.waitFor();
    // It settles without a reload: the tenant feed re-reads it.
    await expect.poll(() => badge.getAttribute('data-status'), { timeout: 60_000 }).toBe('succeeded');
  });

  it('collapses a group into one row with its rollup and expands it', async () => {
    const g = await call(t.app, 'POST', '/groups', {
      body: { kind: 'experiment', label: 'browser experiment', repeat: 3, spec: sleepRun(10) },
    });
    expect(g.status).toBe(201);
    const gid = (g.body.group as { id: string }).id;
    const row = page.locator(`[data-group="${gid}"]`);
    await expect
      .poll(async () => (await row.count()) > 0 && row.textContent(), { timeout: 60_000 })
      .toMatch(/3\/3 settled/);
    await row.click();
    await expect.poll(() => page.locator(`[data-group="${gid}"] + .children .row`).count()).toBe(3);
  });

  it('shows a held-open session with its TTL countdown', async () => {
    const s = await call(t.app, 'POST', '/runs', {
      body: { kind: 'sandbox', subject: { image: 'default' }, lifetime: 'session', ttlSec: 600 },
    });
    expect(s.status).toBe(201);
    const id = (s.body.run as { id: string }).id;
    await expect
      .poll(() => page.locator(`[data-run="${id}"] .when`).textContent(), { timeout: 30_000 })
      .toMatch(/ttl \d+:\d\d/);
  });

  it('is keyboard navigable: j moves, Enter opens the detail with the verdict, Esc closes', async () => {
    await page.locator('body').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('j');
    await page.keyboard.press('j');
    const focused = await page.evaluate<string | null>(
      "document.activeElement?.getAttribute('data-run') ?? null",
    );
    // Land on a plain run row (skip group rows) and open it.
    let id = focused;
    for (let i = 0; i < 10 && !id; i++) {
      await page.keyboard.press('j');
      id = await page.evaluate<string | null>("document.activeElement?.getAttribute('data-run') ?? null");
    }
    expect(id).toMatch(/^run_/);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#detail:not([hidden])');
    await expect
      .poll(() => page.textContent('#d-record'), { timeout: 30_000 })
      .toMatch(/verified from genesis/);
    await expect.poll(() => page.textContent('#d-tree')).toContain(id ?? '');
    await page.screenshot({ path: shot('console-1280-detail') });
    await page.keyboard.press('Escape');
    await page.waitForSelector('#detail', { state: 'hidden' });
    // Esc gives the focus back to the row it opened; k moves up from it.
    const focusedRun =
      "document.activeElement?.getAttribute('data-run') ?? document.activeElement?.getAttribute('data-group') ?? null";
    expect(await page.evaluate<string | null>(focusedRun)).toBe(id);
    const order = await page.evaluate<string[]>(
      "[...document.querySelectorAll('#rows .row')].map((r) => r.dataset.run ?? r.dataset.group)",
    );
    await page.keyboard.press('k');
    expect(await page.evaluate<string | null>(focusedRun)).toBe(order[order.indexOf(id ?? '') - 1]);
    // `/` focuses the filter: typing narrows the rows to that run.
    await page.keyboard.press('/');
    expect(await page.evaluate<string | null>('document.activeElement?.id ?? null')).toBe('filter');
    await page.keyboard.type(id ?? '');
    await expect
      .poll(() =>
        page.evaluate<string[]>(
          "[...document.querySelectorAll('#rows .row[data-run]')].map((r) => r.dataset.run)",
        ),
      )
      .toEqual([id]);
    // Esc leaves the filter and clears it: every row is back.
    await page.keyboard.press('Escape');
    expect(await page.evaluate<string | null>('document.activeElement?.id ?? null')).not.toBe('filter');
    expect(await page.inputValue('#filter')).toBe('');
    await expect.poll(() => page.locator('#rows .row').count()).toBe(order.length);
  });

  it("the detail's record verdict is the API's: head, length, signers named from GET /keys, account, energy", async () => {
    const created = await call(t.app, 'POST', '/runs', {
      body: { kind: 'analysis', subject: { config: { fn: 'echo', value: 7 } } },
    });
    const id = (created.body.run as { id: string }).id;
    await until(
      'the run settled',
      async () => ((await call(t.app, 'GET', `/runs/${id}`)).body.status === 'succeeded' ? true : undefined),
      60_000,
    );
    const rec = await call(t.app, 'GET', `/runs/${id}/record`);
    const v = rec.body.verify as {
      ok: boolean;
      head: string;
      length: number;
      phase: string;
      account: string;
      signedBy: string[];
      cost: { activeUj: string; idleUj: string };
    };
    expect(v.ok).toBe(true);
    const keys = (await (await t.app.request('/keys')).json()) as { keys: { key: string; kind: string }[] };
    await page.locator(`#rows [data-run="${id}"]`).click();
    await page.waitForSelector('#detail:not([hidden])');
    const record = page.locator('#d-record');
    await expect.poll(() => record.textContent(), { timeout: 30_000 }).toMatch(/verified from genesis/);
    const text = (await record.textContent()) ?? '';
    expect(text).toContain(`${v.head} (${v.length} segments, ${v.phase})`);
    expect(text).toContain(`account${v.account}`);
    expect(text).toContain(`active ${v.cost.activeUj} µJ · idle ${v.cost.idleUj} µJ`);
    // An inline analysis interval is signed by the control plane: its key, named by the kind GET /keys gives.
    const cpKey = keys.keys.find((k) => k.kind === 'control-plane')?.key ?? '';
    expect(v.signedBy).toEqual([cpKey]);
    expect(text).toContain(`signed by${cpKey.slice(0, 16)}… (control-plane`);
    await page.keyboard.press('Escape');
    await page.waitForSelector('#detail', { state: 'hidden' });
  });

  it("the detail lists a scored run's verdicts with why each passed or failed; an unscored run shows none", async () => {
    const g = await call(t.app, 'POST', '/groups', {
      body: {
        kind: 'experiment',
        label: 'scored in the console',
        repeat: 1,
        spec: { kind: 'analysis', subject: { config: { fn: 'echo', value: 7 } } },
      },
    });
    expect(g.status, JSON.stringify(g.body)).toBe(201);
    const { id: gid, runIds } = g.body.group as { id: string; runIds: string[] };
    const id = runIds[0]!;
    await until(
      'the run settled',
      async () => ((await call(t.app, 'GET', `/runs/${id}`)).body.status === 'succeeded' ? true : undefined),
      60_000,
    );
    const scored = await call(t.app, 'POST', `/groups/${gid}/score`, {
      body: {
        graders: [
          {
            name: 'as-configured',
            type: 'json_field_equals',
            path: 'outputs.result',
            equalsPath: 'subject.config.value',
          },
          { name: 'eight', type: 'json_field_equals', path: 'outputs.result', equals: 8 },
        ],
      },
    });
    expect(scored.status, JSON.stringify(scored.body)).toBe(201);
    const row = page.locator(`[data-group="${gid}"]`);
    await expect.poll(async () => (await row.count()) > 0, { timeout: 60_000 }).toBe(true);
    await row.click();
    await page.locator(`[data-group="${gid}"] + .children [data-run="${id}"]`).click();
    await page.waitForSelector('#d-scores-section:not([hidden])', { timeout: 30_000 });
    const items = page.locator('#d-scores li');
    expect(await items.allTextContents()).toEqual([
      'as-configured 1 passed: outputs.result equals subject.config.value 7',
      'eight 0 failed: outputs.result differs from 8',
    ]);
    await page.keyboard.press('Escape');
    await page.waitForSelector('#detail', { state: 'hidden' });
    // A run nobody scored: its record and tree load, and no scores section appears.
    const plain = await call(t.app, 'POST', '/runs', {
      body: { kind: 'analysis', subject: { config: { fn: 'echo', value: 1 } } },
    });
    const plainId = (plain.body.run as { id: string }).id;
    const answered = page.waitForResponse((r) => r.url().endsWith(`/runs/${plainId}/scores`));
    await page.locator(`#rows [data-run="${plainId}"]`).click();
    await page.waitForSelector('#detail:not([hidden])');
    expect(await (await answered).json()).toEqual({ scores: [] });
    await expect
      .poll(() => page.textContent('#d-record'), { timeout: 30_000 })
      .toMatch(/verified from genesis|segments/);
    expect(await page.locator('#d-scores-section').isHidden()).toBe(true);
    await page.keyboard.press('Escape');
    await page.waitForSelector('#detail', { state: 'hidden' });
  });

  it("a run's artifacts: listed in its detail, each downloaded with the key, as stored", async () => {
    // A runner paired here executes one command run and uploads what its out/ held (the runner's API).
    const r = await pairTestRunner(t.app, { name: 'console-artifacts', capabilities: COMMAND_CAPS });
    const created = await call(t.app, 'POST', '/runs', {
      body: { kind: 'command', subject: { command: ['true'] } },
    });
    expect(created.status).toBe(201);
    const id = (created.body.run as { id: string }).id;
    const [lease] = await leaseRuns(t.app, r, 1);
    expect(lease?.runId).toBe(id);
    const put = await t.app.request(
      `/runner/v1/runs/${id}/artifacts?epoch=${lease!.epoch}&path=reports/day.txt`,
      {
        method: 'PUT',
        headers: { authorization: `Bearer ${r.credential}`, 'content-type': 'application/octet-stream' },
        body: 'forty-two\n',
      },
    );
    expect(put.status).toBe(201);
    const stored = (await put.json()) as { address: string; size: number };
    const notes = await uploadTestArtifact(t.app, r, lease!, 'notes.md', '# notes\n');
    const done = await call(t.app, 'POST', `/runner/v1/runs/${id}/complete`, {
      key: r.credential,
      body: {
        epoch: lease!.epoch,
        outputs: {
          artifacts: [
            { name: 'reports/day.txt', uri: `artifact:${stored.address}`, bytes: 10, digest: stored.address },
            notes,
          ],
        },
        attestation: encodeAttestationBody(signTestInterval(lease!, r.key.secretKey).body),
      },
    });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    await page.locator(`#rows [data-run="${id}"]`).click();
    await page.waitForSelector('#d-artifacts-section:not([hidden])', { timeout: 30_000 });
    expect(await page.locator('#d-artifacts li').allTextContents()).toEqual([
      `reports/day.txt 10 bytes · ${stored.address}`,
      `notes.md 8 bytes · ${notes.digest}`,
    ]);
    // All of them at once: the run's archive, with the key.
    const [archive] = await Promise.all([page.waitForEvent('download'), page.click('[data-archive]')]);
    expect(archive.suggestedFilename()).toBe(`${id}-artifacts.tar`);
    const entries = await readTar(readFileSync((await archive.path())!));
    expect(entries.map((e) => [e.path, e.type === 'file' ? Buffer.from(e.data).toString() : e.type])).toEqual(
      [
        ['notes.md', '# notes\n'],
        ['reports/day.txt', 'forty-two\n'],
      ],
    );
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.click('[data-artifact="reports/day.txt"]'),
    ]);
    expect(download.suggestedFilename()).toBe('day.txt');
    expect(readFileSync((await download.path())!, 'utf8')).toBe('forty-two\n');
    await page.keyboard.press('Escape');
    await page.waitForSelector('#detail', { state: 'hidden' });
  });

  it('the causal tree: up to the root, down to the grandchild; a node opens its run', async () => {
    const make = async (causedBy?: string) => {
      const r = await call(t.app, 'POST', '/runs', {
        body: sleepRun(30_000),
        ...(causedBy ? { headers: { 'x-everdict-caused-by': causedBy } } : {}),
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return (r.body.run as { id: string }).id;
    };
    const root = await make();
    const child = await make(root);
    const grandchild = await make(child);
    await page.locator(`#rows [data-run="${child}"]`).click();
    await page.waitForSelector('#detail:not([hidden])');
    // root (a link) › child (this run, bold) › grandchild (a link), nested as the causation is.
    const tree = page.locator('#d-tree');
    await tree.locator(`:scope > li > button[data-open="${root}"]`).waitFor({ timeout: 30_000 });
    expect(await tree.locator(':scope > li > ul > li > b').textContent()).toBe(child);
    const leaf = tree.locator(`:scope > li > ul > li > ul > li > button[data-open="${grandchild}"]`);
    await leaf.waitFor({ timeout: 30_000 });
    await leaf.click();
    await expect.poll(() => page.textContent('#d-head h2')).toBe(grandchild);
    await page.keyboard.press('Escape');
    await page.waitForSelector('#detail', { state: 'hidden' });
    expect((await call(t.app, 'POST', `/runs/${root}/cancel`, { body: {} })).status).toBe(200);
  });

  it('shows a refused create as the refusal, and creates nothing', async () => {
    const root = await call(t.app, 'POST', '/runs', {
      body: { ...sleepRun(30_000), envelope: { capRuns: 1 } },
    });
    const rootId = (root.body.run as { id: string }).id;
    const before = await call(t.app, 'GET', '/runs?limit=500');
    await page.keyboard.press('n');
    await page.waitForSelector('#new-run[open]');
    await page.fill('#nr-subject', JSON.stringify({ config: { fn: 'echo', value: 1 } }));
    await page.fill('#nr-caused-by', rootId);
    await page.click('#nr-submit');
    const refusal = page.locator('#nr-refusal');
    await refusal.waitFor();
    expect(await refusal.textContent()).toMatch(/refused 402 envelope_exhausted/);
    const after = await call(t.app, 'GET', '/runs?limit=500');
    expect((after.body.items as unknown[]).length).toBe((before.body.items as unknown[]).length);
    await page.click('#nr-cancel');
    await call(t.app, 'POST', `/runs/${rootId}/cancel`, { body: {} });
  });

  it('fits 1280×800 and 390×844 without horizontal scroll', async () => {
    await page.setViewportSize(DESKTOP);
    const wide = await sideScroll(page);
    await page.screenshot({ path: shot('console-1280') });
    expect(wide.scroll).toBeLessThanOrEqual(wide.client);
    await page.setViewportSize(PHONE);
    const narrow = await sideScroll(page);
    await page.screenshot({ path: shot('console-390'), fullPage: true });
    expect(narrow.scroll).toBeLessThanOrEqual(narrow.client);
    // The detail pane open on a phone too.
    await page.locator('#rows .row[data-run]').first().click();
    await page.waitForSelector('#detail:not([hidden])');
    const detail = await sideScroll(page);
    expect(detail.scroll).toBeLessThanOrEqual(detail.client);
  });

  it('a file of the page that does not load fails the wait at once, naming it', async () => {
    const missing = '/console/assets/views.js';
    const broken = await listen((req) =>
      new URL(req.url).pathname === missing ? new Response('gone', { status: 404 }) : t.app.fetch(req),
    );
    const p = await browser.newPage({ viewport: DESKTOP });
    try {
      const watched = guardPage(p);
      const started = Date.now();
      const error = await login(p, broken.base, ADMIN_KEY).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(String(error)).toMatch(/script \/console\/assets\/views\.js answered 404/);
      expect(() => watched.check()).toThrow(/views\.js answered 404/);
      // Decided by the 404, not by a wait running out (WAIT_MS bounds every wait on the page).
      expect(Date.now() - started).toBeLessThan(WAIT_MS);
    } finally {
      await p.close().catch(() => undefined);
      await broken.close();
    }
  });
});

describe('console routes', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await testApp();
  }, 300_000);
  afterAll(async () => app?.close());

  it('serves the page without a key and its files from a fixed table (xterm from node_modules)', async () => {
    const page = await app.app.request('/console');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const xterm = await app.app.request('/console/assets/xterm.mjs');
    expect(xterm.status).toBe(200);
    expect(await xterm.text()).toMatch(/Terminal/);
    const other = await app.app.request('/console/assets/..%2Fpackage.json');
    expect(other.status).toBe(404);
  });

  it('GET /envelopes and /tenant/queue need a key and answer the tenant only', async () => {
    expect((await call(app.app, 'GET', '/envelopes', { key: null })).status).toBe(401);
    expect((await call(app.app, 'GET', '/console/feed', { key: null })).status).toBe(401);
    const root = await call(app.app, 'POST', '/runs', {
      body: {
        kind: 'analysis',
        subject: { config: { fn: 'echo' } },
        envelope: { capRuns: 2, inFlightCap: 1 },
      },
    });
    const id = (root.body.run as { id: string }).id;
    const env = await call(app.app, 'GET', '/envelopes');
    expect(env.status).toBe(200);
    const mine = (env.body.items as { openedBy: string | null; caps: { runs: number } }[]).find(
      (e) => e.openedBy === id,
    );
    expect(mine?.caps.runs).toBe(2);
    const other = await app.tenant('other-tenant');
    const theirs = await call(app.app, 'GET', '/envelopes', { key: other });
    expect((theirs.body.items as { openedBy: string | null }[]).some((e) => e.openedBy === id)).toBe(false);
    const q = await call(app.app, 'GET', '/tenant/queue');
    expect(q.status).toBe(200);
    expect((q.body.queued as { total: number }).total).toBeGreaterThanOrEqual(1);
  });
  it("GET /console/feed streams the tenant's own facts live, never another tenant's", async () => {
    const other = await app.tenant('feed-other');
    const res = await app.app.request('/console/feed', { headers: { authorization: `Bearer ${other}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    const readUntil = async (pattern: RegExp) => {
      while (!pattern.test(text)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`feed ended before ${pattern}`);
        text += decoder.decode(value, { stream: true });
      }
    };
    await readUntil(/event: ready/);
    const mine = await call(app.app, 'POST', '/runs', {
      body: { kind: 'analysis', subject: { config: { fn: 'echo' } } },
    });
    const theirs = await call(app.app, 'POST', '/runs', {
      key: other,
      body: { kind: 'analysis', subject: { config: { fn: 'echo' } } },
    });
    const theirId = (theirs.body.run as { id: string }).id;
    await readUntil(new RegExp(`${theirId}`));
    expect(text).toMatch(/event: run\.queued/);
    expect(text).not.toContain((mine.body.run as { id: string }).id);
    await reader.cancel();
  });
});
