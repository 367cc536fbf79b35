// End-to-end helpers: a real control plane (the built server, PGlite), the built `everdict-runner` as child
// processes on real process-driver sandboxes, and waits on conditions (never on time alone).
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient, dataOf, type EverdictClient } from '@everdict/client';
import type WebSocket from 'ws';

export const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
export const RUNRECORD_CLI = fileURLToPath(
  new URL('../../../packages/runrecord/dist/cli.js', import.meta.url),
);

export function scratch(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o711); // the sandbox user passes through to its workspace
  return dir;
}

export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 480_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export function admin(url: string, apiKey: string): EverdictClient {
  return createClient({ baseUrl: url, token: apiKey });
}

/** Mints a pairing token (single use) with the tenant's admin key. */
export async function mintPairingToken(url: string, apiKey: string): Promise<string> {
  // No body: the runner names itself at pairing.
  return dataOf(await admin(url, apiKey).POST('/runners/pairing-tokens', {})).token;
}

/** Runs `everdict-runner pair` into `stateDir/state` (existing or not): its exit status and stderr. */
export async function runPair(
  url: string,
  token: string,
  stateDir: string,
  name: string,
  slots = 2,
): Promise<{ status: number | null; stderr: string }> {
  // Asynchronously: a spawnSync would block this process's event loop for the whole pairing (seconds on a
  // loaded machine), and an idle keep-alive socket the server closes meanwhile would still look open to the
  // next request sent right after — `fetch failed` (other side closed).
  const child = spawn(
    process.execPath,
    [
      CLI,
      'pair',
      url,
      token,
      '--name',
      name,
      '--slots',
      String(slots),
      '--state-dir',
      join(stateDir, 'state'),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 300_000);
  const status = await new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  clearTimeout(timer);
  return { status, stderr };
}

/** Mints a pairing token and runs `everdict-runner pair` in a new directory; returns the state directory. */
export async function pair(url: string, apiKey: string, name: string, slots = 2): Promise<string> {
  const token = await mintPairingToken(url, apiKey);
  const stateDir = scratch(`runner-${name}-`);
  const { status, stderr } = await runPair(url, token, stateDir, name, slots);
  if (status !== 0) throw new Error(`pair failed (${status}): ${stderr}`);
  return stateDir;
}

export interface RunnerProcess {
  readonly child: ChildProcess;
  logs(): string;
  readonly exited: Promise<number | null>;
}

export function startRunner(stateDir: string, env: Record<string, string> = {}): RunnerProcess {
  const child = spawn(
    process.execPath,
    [CLI, 'start', '--state-dir', join(stateDir, 'state'), '--grace-ms', '30000'],
    {
      env: {
        ...process.env,
        EVERDICT_PLACEMENT_DIR: join(stateDir, 'placement'),
        EVERDICT_IMAGES_DIR: join(stateDir, 'images'),
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let log = '';
  child.stdout?.on('data', (c: Buffer) => {
    log += c.toString();
  });
  child.stderr?.on('data', (c: Buffer) => {
    log += c.toString();
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, logs: () => log, exited };
}

// biome-ignore lint/suspicious/noExplicitAny: a raw JSON answer, read field by field in the tests
export type Json = Record<string, any>;

/** A raw call to the control plane's API (status and parsed body), for routes read field by field. */
export async function apiCall(
  cp: { url: string; apiKey: string },
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Json }> {
  const r = await fetch(`${cp.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${cp.apiKey}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await r.text();
  return { status: r.status, body: text ? (JSON.parse(text) as Json) : {} };
}

/**
 * Resizes a terminal (its WebSocket) and waits until `stty size` shows the new size. The process driver applies
 * a resize through its own pipe (placement-process pty.ts), which races stdin: a `stty size` sent right after
 * may still see the old size, so it is asked again until the new one shows. Returns how often it was asked.
 */
export async function resizeUntilShown(
  ws: WebSocket,
  output: () => string,
  size: { cols: number; rows: number },
): Promise<number> {
  ws.send(JSON.stringify({ type: 'resize', cols: size.cols, rows: size.rows }));
  let asked = 0;
  await waitFor('the new terminal size', async () => {
    if (output().includes(`${size.rows} ${size.cols}`)) return true;
    asked += 1;
    ws.send(Buffer.from('stty size\n'), { binary: true });
    await new Promise((r) => setTimeout(r, 300));
    return undefined;
  });
  return asked;
}
