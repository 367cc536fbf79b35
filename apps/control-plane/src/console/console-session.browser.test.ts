// The console and a held-open session, in headless Chromium against the real app on a real core with the
// embedded session placement (real bubblewrap sandboxes) and the terminal's WebSocket on a real node server:
// the session opened through the API shows as a healthy session with its TTL countdown, its idle countdown and
// its burn (money and energy so far, estimated); its detail has the same; its terminal (xterm.js over the
// ticket flow) runs what is typed into it and shows the output in the xterm DOM, and the remote `exit 3`
// shows as `exited 3`; a character split across two output chunks shows whole in the trajectory pane.
// Screenshots (1280×800 and 390×844) go to .test-results/screenshots/. The page is guarded (`guardPage`): a
// file that does not load (xterm's modules included) fails at once, naming it.
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
} from '../../test/console-browser.js';
import { type SessionTestApp, sessionTestApp } from '../../test/sessions.js';
import { buildApp } from '../app.js';
import { call } from '../http/testing/harness.js';
import { terminalServer } from '../sessions/terminal.js';
import { consoleSource } from './source.js';

let t: SessionTestApp;
let server: { base: string; close(): Promise<void> };
let closeTerminals: () => Promise<void>;
let browser: Browser;
let page: Page;
let guard: PageGuard | undefined;
let sessionId = '';
let key = '';

const api = (method: string, p: string, body?: unknown) =>
  call(t.app, method, p, { key, ...(body === undefined ? {} : { body }) });

describe('console: a held-open session and its terminal (headless Chromium, bubblewrap)', () => {
  beforeAll(async () => {
    browser = await launchChromium();
    t = await sessionTestApp({ sweep: false });
    // A tenant at $36/h for a held-open session, so the burn of a few seconds is a visible amount of money.
    key = await t.tenant('console-sessions', { sessionUsdPerHour: 36 });
    const app = buildApp({
      services: t.core.services,
      health: () => t.core.health(),
      keys: () => t.core.keys.list(),
      trajectories: t.core.trajectoryService,
      console: consoleSource(t.core),
    });
    const terminals = terminalServer(t.core.services.sessions!);
    closeTerminals = terminals.close;
    server = await listen(app.app.fetch, terminals.upgrade);
    page = await browser.newPage({ viewport: DESKTOP });
    guard = guardPage(page);
    await login(page, server.base, key);
  }, 300_000);

  beforeEach(() => guard?.check());

  afterAll(async () => {
    await browser?.close();
    await closeTerminals?.();
    await server?.close();
    await t?.close();
  });

  it('shows the session as healthy, with its TTL countdown, idle countdown and burn', async () => {
    const opened = await api('POST', '/sandboxes', { ttlSec: 1800, idleTimeoutSec: 900 });
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    sessionId = (opened.body.run as { id: string }).id;
    const row = page.locator(`[data-run="${sessionId}"]`);
    await row.waitFor({ timeout: 30_000 });
    await expect.poll(() => row.locator('.badge').getAttribute('data-status')).toBe('session');
    await expect
      .poll(() => row.locator('.when').textContent(), { timeout: 30_000 })
      .toMatch(/^ttl 2\d:\d\d$/);
    // Idle countdown and burn come from GET /sandboxes (re-read every few seconds and on every fact).
    const burn = row.locator('.burn');
    await expect
      .poll(() => burn.textContent(), { timeout: 30_000 })
      .toMatch(/^idle \d+:\d\d · \$\d+\.\d\d · [\d.]+ [kM]?J$/);
    // The burn grows while it is held open ($36/h is a cent a second).
    const cents = async () => Number(/\$(\d+\.\d\d)/.exec((await burn.textContent()) ?? '')?.[1] ?? 0);
    const first = await cents();
    await expect.poll(cents, { timeout: 60_000 }).toBeGreaterThan(first);
  });

  it('opens its detail with the session facts and a terminal that runs what is typed', async () => {
    await page.locator(`[data-run="${sessionId}"]`).click();
    await page.waitForSelector('#detail:not([hidden])');
    await expect
      .poll(() => page.textContent('#d-session'), { timeout: 30_000 })
      .toMatch(
        /^open · idle \d+:\d\d of 15:00 · burn \$\d+\.\d\d \(\$36\.00\/h\) · [\d.]+ [kM]?J estimated$/,
      );
    await page.click('#d-term-open');
    await expect.poll(() => page.textContent('#d-term-state'), { timeout: 60_000 }).toBe('connected');
    const rows = page.locator('#d-term .xterm-rows');
    await expect.poll(() => rows.textContent(), { timeout: 60_000 }).toContain('$'); // the remote prompt
    // Typed into xterm: the expansion runs remotely, so `hello-42-console` is output, not the echoed input.
    await page.keyboard.type('echo hello-$((6*7))-console\n');
    await expect.poll(() => rows.textContent(), { timeout: 60_000 }).toContain('hello-42-console');
    await page.screenshot({ path: shot('console-1280-terminal') });
    const wide = await sideScroll(page);
    expect(wide.scroll).toBeLessThanOrEqual(wide.client);
    await page.setViewportSize(PHONE);
    await page.locator('#d-term').scrollIntoViewIfNeeded();
    const narrow = await sideScroll(page);
    expect(narrow.scroll).toBeLessThanOrEqual(narrow.client);
    await page.screenshot({ path: shot('console-390-terminal') });
    await page.setViewportSize(DESKTOP);
    await page.locator('#d-term .xterm-helper-textarea').focus();
    // A character split across two output chunks (€ is E2 82 AC; a second passes between its bytes) is shown
    // whole in the trajectory pane, not as U+FFFD twice.
    await page.keyboard.type("printf '\\342\\202'; sleep 1; printf '\\254-euro\\n'\n");
    await expect.poll(() => page.textContent('#d-traj'), { timeout: 60_000 }).toContain('€-euro');
    expect(await page.textContent('#d-traj')).not.toContain('\ufffd');
    await page.keyboard.type('exit 3\n');
    await expect.poll(() => page.textContent('#d-term-state'), { timeout: 60_000 }).toBe('exited 3');
    // The session outlives its terminal.
    expect((await api('GET', `/sandboxes/${sessionId}`)).body.state).toBe('open');
  });

  it('a closed session leaves the session view: it settles as a finished run, not stuck work', async () => {
    expect((await api('POST', `/sandboxes/${sessionId}/close`)).status).toBe(200);
    const badge = page.locator(`#rows [data-run="${sessionId}"] .badge`);
    await expect.poll(() => badge.getAttribute('data-status'), { timeout: 30_000 }).toBe('succeeded');
    expect(await page.locator(`#rows [data-run="${sessionId}"] .burn`).count()).toBe(0);
  });
});
