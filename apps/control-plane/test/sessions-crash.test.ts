// `kill -9` of the built control plane holding three open sessions (one with a command still running):
// after a restart on the same database and placement directory, each session is settled — failed
// executor_lost, record closed(abandoned) — and no process, workspace, cgroup or label file remains.
// Needs the build (`pnpm --filter @everdict/control-plane build`); live PostgreSQL when
// EVERDICT_TEST_DATABASE_URL is set, else PGlite in the data directory.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createLiveDatabase, LIVE_PG } from './db.js';
import { writeMigratedPgliteDir } from './pglite-template.js';
import { type Json, passableDir, sandboxesIn, workspacesIn } from './sessions.js';

const main = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const KEY = 'evd_crash_test_admin_key_0123456789abcdef';
const children: ChildProcess[] = [];
let drop: (() => Promise<void>) | null = null;
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await drop?.();
});

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

async function until<T>(what: string, check: () => Promise<T | undefined>, ms = 120_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Pids whose argv is exactly `sleep <marker>`. */
function sleepers(marker: string): number[] {
  return readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .filter((n) => {
      try {
        const argv = readFileSync(`/proc/${n}/cmdline`, 'utf8').split('\0');
        return argv[0]?.endsWith('sleep') && argv[1] === marker;
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe('a control plane killed with open sessions', () => {
  it('after restart settles each one and leaves nothing behind', async () => {
    expect(existsSync(main), `${main} is missing: build the control plane first`).toBe(true);
    const root = passableDir('cp-crash-');
    const stateDir = path.join(root, 'placement');
    let databaseUrl: string | undefined;
    if (LIVE_PG) {
      const live = await createLiveDatabase();
      databaseUrl = live.url;
      drop = live.drop;
    } else {
      // The first start finds a migrated ledger (the run's template), as on a restart: initdb and the
      // migrations are the control plane's first start, tested elsewhere; this test is about the crash.
      await writeMigratedPgliteDir(path.join(root, 'data', 'pglite'));
    }
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const start = () => {
      const child = spawn(process.execPath, [main], {
        env: {
          PATH: process.env.PATH,
          PORT: String(port),
          HOST: '127.0.0.1',
          EVERDICT_DATA_DIR: path.join(root, 'data'),
          EVERDICT_PLACEMENT_DIR: stateDir,
          EVERDICT_BOOTSTRAP_API_KEY: KEY,
          EVERDICT_SESSION_SWEEP_MS: '200',
          LOG_LEVEL: 'warn',
          ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
        },
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      children.push(child);
      return child;
    };
    const api = async (method: string, p: string, body?: unknown) => {
      const res = await fetch(`${base}${p}`, {
        method,
        headers: {
          authorization: `Bearer ${KEY}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, body: (await res.json().catch(() => ({}))) as Json };
    };
    const healthy = async () => ((await fetch(`${base}/healthz`)).status === 200 ? true : undefined);

    const first = start();
    await until('first start', healthy);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await api('POST', '/sandboxes', { ttlSec: 3600, idleTimeoutSec: 3600 });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      ids.push(r.body.run.id);
      expect(
        (await api('POST', `/sandboxes/${r.body.run.id}/exec`, { command: ['sh', '-c', 'echo x > f'] }))
          .status,
      ).toBe(200);
    }
    const marker = String(600_000 + (process.pid % 1000));
    void api('POST', `/sandboxes/${ids[0]}/exec`, { command: ['sleep', marker], timeoutMs: 600_000 }).catch(
      () => undefined,
    );
    await until('the long command runs', async () => (sleepers(marker).length > 0 ? true : undefined));
    const records = sandboxesIn(stateDir).map(
      (f) =>
        JSON.parse(readFileSync(path.join(stateDir, 'sandboxes', f), 'utf8')) as {
          limits: { paths: string[] };
          workspace: string;
        },
    );
    expect(records).toHaveLength(3);
    const cgroups = records.flatMap((r) => r.limits.paths);

    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    await until('the sandbox processes die with their parent', async () =>
      sleepers(marker).length === 0 ? true : undefined,
    );
    expect(sandboxesIn(stateDir)).toHaveLength(3); // left behind until someone reaps

    start();
    await until('restart', healthy);
    for (const id of ids) {
      const run = await until(`session ${id} settled`, async () => {
        const r = await api('GET', `/runs/${id}`);
        return r.body.status === 'failed' ? r.body : undefined;
      });
      expect(run.error).toMatchObject({ code: 'executor_lost' });
      const record = await api('GET', `/runs/${id}/record`);
      expect(record.body.verify).toMatchObject({ ok: true, phase: 'closed' });
      expect(JSON.stringify(record.body.wire)).toContain('abandoned');
    }
    expect((await api('GET', '/sandboxes')).body.items).toEqual([]);
    expect(sandboxesIn(stateDir)).toEqual([]);
    expect(workspacesIn(stateDir)).toEqual([]);
    for (const r of records) expect(existsSync(r.workspace)).toBe(false);
    for (const c of cgroups) expect(existsSync(c), c).toBe(false);
  }, 300_000);
});
