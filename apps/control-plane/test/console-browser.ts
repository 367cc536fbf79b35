// Test helpers for the console's browser tests: Debian's Chromium driven by playwright-core (never skipped —
// without it a suite fails saying how to get it; `.ci/run` installs it), a real node server for an app
// (with the terminal's WebSocket upgrade when given one), the login, and where screenshots go:
// `apps/control-plane/.test-results/screenshots/` (git-ignored, written on every `pnpm test`; the root
// README's quickstart links them).
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

/** Opens the console and connects with `key`; resolves once the live feed is up. */
export async function login(p: Page, base: string, key: string): Promise<void> {
  await p.goto(`${base}/console`);
  await p.fill('#key', key);
  await p.click('#login-form button[type=submit]');
  await p.waitForSelector('#conn.live');
}
