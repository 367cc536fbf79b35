// Test helpers for the console's browser tests: Debian's Chromium driven by playwright-core (never skipped —
// without it a suite fails saying how to get it; `.ci/run` installs it), a real node server for an app
// (with the terminal's WebSocket upgrade when given one), the login, where screenshots go:
// `apps/control-plane/.test-results/screenshots/` (git-ignored, written on every `pnpm test`; the root
// README's quickstart links them) — and `guardPage`, which fails a page's waits at once, naming the asset,
// when one of its files does not load (a 404 on a module left the login waiting out every timeout).
import { existsSync, mkdirSync } from 'node:fs';
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import { type Browser, chromium, type Page } from 'playwright-core';

export const CHROMIUM = process.env.EVERDICT_CHROMIUM ?? '/usr/bin/chromium';
export const SCREENSHOTS = fileURLToPath(new URL('../.test-results/screenshots/', import.meta.url));
/** The two viewports the console must fit without horizontal scroll. */
export const DESKTOP = { width: 1280, height: 800 } as const;
export const PHONE = { width: 390, height: 844 } as const;

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium, or set EVERDICT_CHROMIUM`);
  mkdirSync(SCREENSHOTS, { recursive: true });
  return chromium.launch({ executablePath: CHROMIUM, headless: true });
}

export const shot = (name: string) => `${SCREENSHOTS}${name}.png`;

type Upgrade = (req: http.IncomingMessage, socket: Duplex, head: Buffer) => boolean;

/** Serves `fetch` on 127.0.0.1 (an ephemeral port); `upgrade` takes WebSocket upgrades (the terminal). */
export async function listen(
  fetch: (req: Request) => Response | Promise<Response>,
  upgrade?: Upgrade,
): Promise<{ base: string; close(): Promise<void> }> {
  const server = serve({ fetch, port: 0, hostname: '127.0.0.1' }) as http.Server;
  if (upgrade)
    server.on('upgrade', (req, socket, head) => {
      if (!upgrade(req, socket, head)) socket.destroy();
    });
  await new Promise<void>((r) => (server.listening ? r() : server.once('listening', () => r())));
  return {
    base: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** The document's scroll width against its client width (evaluated in the page: these types have no DOM). */
export function sideScroll(p: Page): Promise<{ scroll: number; client: number }> {
  return p.evaluate<{ scroll: number; client: number }>(
    '({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })',
  );
}

/** Every wait on a guarded page is bounded by this (playwright's own default, made explicit). */
export const WAIT_MS = 30_000;

export interface PageGuard {
  /** What broke the page first (a file that did not load, a script that did not parse), if anything has. */
  failure(): string | undefined;
  /** Throws the failure: a test's first line, so the tests after a broken page fail at once too. */
  check(): void;
}

/** Resource types whose failure leaves the console half-built: its page, modules, stylesheet, images. */
const ASSETS = new Set(['document', 'script', 'stylesheet', 'image', 'font']);
/** What a module script that cannot load or parse says in the page's console. */
const MODULE_FAILURE =
  /Failed to load module script|Failed to fetch dynamically imported module|does not provide an export/;

/**
 * Watches `p` for what would otherwise show only as a wait that never ends: an asset answered ≥ 400 or not
 * loaded (an abort by navigation excepted), a module that fails to load, a script that does not parse. The
 * first one closes the page with its description as the reason, so every pending and later wait on the page
 * rejects at once with it; waits are bounded by WAIT_MS.
 */
export function guardPage(p: Page): PageGuard {
  let failed: string | undefined;
  const fail = (what: string) => {
    if (failed !== undefined) return;
    failed = `the console page broke: ${what}`;
    void p.close({ reason: failed }).catch(() => undefined);
  };
  const where = (url: string) => {
    const u = new URL(url);
    return `${u.pathname}${u.search}`;
  };
  p.setDefaultTimeout(WAIT_MS);
  p.setDefaultNavigationTimeout(WAIT_MS);
  p.on('response', (r) => {
    const type = r.request().resourceType();
    if (ASSETS.has(type) && r.status() >= 400) fail(`${type} ${where(r.url())} answered ${r.status()}`);
  });
  p.on('requestfailed', (r) => {
    const error = r.failure()?.errorText ?? 'failed';
    if (ASSETS.has(r.resourceType()) && !error.includes('ERR_ABORTED'))
      fail(`${r.resourceType()} ${where(r.url())} did not load (${error})`);
  });
  p.on('console', (m) => {
    if (m.type() === 'error' && MODULE_FAILURE.test(m.text())) fail(m.text());
  });
  p.on('pageerror', (e) => {
    if (e.name === 'SyntaxError') fail(`${e.name}: ${e.message}`);
  });
  guards.set(p, () => failed);
  return {
    failure: () => failed,
    check: () => {
      if (failed !== undefined) throw new Error(failed);
    },
  };
}
const guards = new WeakMap<Page, () => string | undefined>();

/** Opens the console and connects with `key`; resolves once the live feed is up. */
export async function login(p: Page, base: string, key: string): Promise<void> {
  try {
    await p.goto(`${base}/console`);
    await p.fill('#key', key);
    await p.click('#login-form button[type=submit]');
    await p.waitForSelector('#conn.live');
  } catch (e) {
    // A guarded page that broke says what broke, not which wait it interrupted.
    const failure = guards.get(p)?.();
    throw failure === undefined ? e : new Error(failure, { cause: e });
  }
}
