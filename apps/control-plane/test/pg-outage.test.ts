// The built control plane (dist/main.js, a real child process) on a PostgreSQL cluster this test owns and
// breaks: `pg_ctl stop`/`start`, `pg_ctl restart -m fast` and `pg_terminate_backend` while 4 clients create
// runs. The process never dies; meanwhile requests answer 201 or 503 `database_unavailable` with a
// Retry-After (never a 500, never a hang past the 5 s bound + slack for a loaded machine); /healthz says
// 503 with its reason while the database is down; after its return the process recovers by itself (health,
// LISTEN) and every acknowledged run exists and completes. Then kill -9 with runs executing: after a
// restart they are requeued (lease expiry) and complete, each settled once.
// Needs PostgreSQL's server binaries (CI installs them); without them it FAILS — it never skips.
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from './core.js';
import { freePort, PgCluster } from './pg-cluster.js';

const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const KEY = 'evd_outage_test_key_0000000001';
/** The issue's bound on any answer while the database is away, plus slack for a loaded 2-core machine. */
const ANSWER_BOUND_MS = 5_000 + 3_000;

class Server {
  proc: ChildProcess | undefined;
  output = '';
  exited: number | string | null = null;
  constructor(
    readonly port: number,
    private readonly env: Record<string, string>,
  ) {}
  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  async start(): Promise<void> {
    this.exited = null;
    const p = spawn(process.execPath, [MAIN], {
      env: {
        ...process.env,
        ...this.env,
        PORT: String(this.port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        EVERDICT_EMBEDDED_RUNNER: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    p.stdout?.on('data', (d) => {
      this.output += String(d);
    });
    p.stderr?.on('data', (d) => {
      this.output += String(d);
    });
    p.on('exit', (code, signal) => {
      this.exited = code ?? signal;
    });
    this.proc = p;
    await eventually(async () => ((await this.health()).status === 200 ? true : undefined), 90_000, 100);
  }
  alive(): boolean {
    return this.exited === null;
  }
  async health(): Promise<{ status: number; body: Record<string, unknown> }> {
    try {
      const r = await fetch(`${this.base}/healthz`, { signal: AbortSignal.timeout(ANSWER_BOUND_MS) });
      return { status: r.status, body: (await r.json()) as Record<string, unknown> };
    } catch (e) {
      return { status: 0, body: { error: String(e) } };
    }
  }
  async request(method: string, path: string, body?: unknown) {
    const t0 = performance.now();
    const r = await fetch(`${this.base}${path}`, {
      method,
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await r.text();
    return {
      status: r.status,
      ms: performance.now() - t0,
      retryAfter: r.headers.get('retry-after'),
      body: (text ? JSON.parse(text) : {}) as Record<string, unknown>,
    };
  }
  kill9(): Promise<void> {
    return new Promise((resolve) => {
      if (!this.proc || !this.alive()) return resolve();
      this.proc.once('exit', () => resolve());
      this.proc.kill('SIGKILL');
    });
  }
  async stop(): Promise<void> {
    if (!this.proc || !this.alive()) return;
    const done = new Promise<void>((resolve) => this.proc?.once('exit', () => resolve()));
    this.proc.kill('SIGTERM');
    await done;
  }
}

interface Outcome {
  status: number;
  code?: unknown;
  retryAfter: string | null;
  ms: number;
}

let cluster: PgCluster;
let server: Server;

beforeAll(async () => {
  cluster = await PgCluster.create();
  server = new Server(await freePort(), {
    DATABASE_URL: cluster.url,
    EVERDICT_BOOTSTRAP_API_KEY: KEY,
    EVERDICT_LEASE_MS: '2000',
    EVERDICT_SHUTDOWN_GRACE_MS: '2000',
  });
  await server.start();
}, 180_000);

afterAll(async () => {
  await server?.kill9();
  cluster?.destroy();
}, 60_000);

describe('the database going away (real PostgreSQL, restarted by the test)', () => {
  it('survives stop/start, restart -m fast and pg_terminate_backend under 4 creating clients; nothing acknowledged is lost', async () => {
    const acknowledged: string[] = [];
    const outcomes: Outcome[] = [];
    let running = true;
    const client = async (n: number) => {
      for (let i = 0; running; i++) {
        try {
          const r = await server.request('POST', '/runs', {
            kind: 'analysis',
            subject: { config: { fn: 'echo', message: `c${n}-${i}` } },
          });
          outcomes.push({
            status: r.status,
            code: (r.body as { code?: unknown }).code,
            retryAfter: r.retryAfter,
            ms: r.ms,
          });
          const id = (r.body as { run?: { id?: string } }).run?.id;
          if (r.status === 201 && id) acknowledged.push(id);
          if (r.status === 503) await new Promise((res) => setTimeout(res, 100));
        } catch (e) {
          outcomes.push({ status: 0, code: String(e), retryAfter: null, ms: 0 });
        }
      }
    };
    const clients = [0, 1, 2, 3].map(client);
    const progress = async (past: number) =>
      eventually(async () => (acknowledged.length > past ? true : undefined), 60_000, 50);

    await progress(20);
    // 1. The database is down: /healthz 503 with the reason; creates answer 503 + Retry-After.
    cluster.stop();
    const down = await eventually(
      async () => {
        const h = await server.health();
        return h.status === 503 ? h : undefined;
      },
      20_000,
      100,
    );
    expect(down.body).toMatchObject({ code: 'database_unavailable' });
    expect(String(down.body.reason ?? '')).not.toBe('');
    const refused = await server.request('POST', '/runs', {
      kind: 'analysis',
      subject: { config: { fn: 'echo' } },
    });
    expect(refused).toMatchObject({ status: 503, retryAfter: '2', body: { code: 'database_unavailable' } });
    expect(refused.ms).toBeLessThan(ANSWER_BOUND_MS);
    expect(server.alive()).toBe(true);
    cluster.start();
    const back = performance.now();
    await eventually(async () => ((await server.health()).status === 200 ? true : undefined), 30_000, 100);
    const recoveredMs = performance.now() - back;

    // 2. restart -m fast under load; 3. pg_terminate_backend under load.
    let mark = acknowledged.length;
    await progress(mark + 10);
    cluster.restart();
    await progress(acknowledged.length + 10);
    expect(server.alive()).toBe(true);
    mark = acknowledged.length;
    expect(await cluster.terminateBackends()).toBeGreaterThan(0);
    await progress(mark + 10);
    expect(await cluster.terminateBackends()).toBeGreaterThan(0);
    await progress(acknowledged.length + 10);
    running = false;
    await Promise.all(clients);
    expect(server.alive(), server.output).toBe(true);

    // Every answer: 201, or 503 database_unavailable with Retry-After; none a 500, none past the bound.
    const bad = outcomes.filter(
      (o) =>
        !(
          o.status === 201 ||
          (o.status === 503 && o.code === 'database_unavailable' && o.retryAfter !== null)
        ),
    );
    expect(bad).toEqual([]);
    expect(outcomes.filter((o) => o.ms > ANSWER_BOUND_MS)).toEqual([]);
    expect(recoveredMs).toBeLessThan(10_000 + 5_000);

    // The LISTEN connection came back by itself.
    await eventually(
      async () => {
        const rows = await cluster.query<{ n: string }>(
          "SELECT count(*) AS n FROM pg_stat_activity WHERE query ILIKE 'LISTEN%'",
        );
        return Number(rows[0]?.n) > 0 ? true : undefined;
      },
      15_000,
      200,
    );

    // Nothing acknowledged is lost: every 201 run exists and completes.
    expect(acknowledged.length).toBeGreaterThan(40);
    for (const id of acknowledged) {
      const run = await eventually(
        async () => {
          const r = await server.request('GET', `/runs/${id}`);
          return r.status === 200 && r.body.status === 'succeeded' ? r.body : undefined;
        },
        120_000,
        100,
      );
      expect(run.id).toBe(id);
    }
  }, 600_000);

  it('kill -9 with runs executing: after restart they are requeued and complete, settled once', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await server.request('POST', '/runs', {
        kind: 'analysis',
        subject: { config: { fn: 'sleep', ms: 30_000 } },
      });
      expect(r.status).toBe(201);
      ids.push((r.body as { run: { id: string } }).run.id);
    }
    // Executing: running with a lease.
    await eventually(
      async () => {
        const rows = await cluster.query<{ n: string }>('SELECT count(*) AS n FROM run_leases');
        return Number(rows[0]?.n) === ids.length ? true : undefined;
      },
      60_000,
      100,
    );
    await server.kill9();
    // Make the retry quick: same runs, now short (the subject is what the next attempt executes).
    await cluster.query(
      `UPDATE runs SET subject = jsonb_set(subject, '{config,ms}', '50') WHERE id IN (${ids.map((i) => `'${i}'`).join(',')})`,
    );
    await server.start();
    for (const id of ids) {
      const run = await eventually(
        async () => {
          const r = await server.request('GET', `/runs/${id}`);
          return r.status === 200 && r.body.status === 'succeeded' ? r.body : undefined;
        },
        120_000,
        100,
      );
      expect(run).toMatchObject({ id, status: 'succeeded', attempt: 2 });
    }
    const facts = await cluster.query<{ run_id: string; kind: string }>(
      `SELECT run_id, kind FROM events WHERE run_id IN (${ids.map((i) => `'${i}'`).join(',')}) ORDER BY id`,
    );
    for (const id of ids) {
      expect(facts.filter((f) => f.run_id === id).map((f) => f.kind)).toEqual([
        'run.queued',
        'run.started',
        'run.requeued',
        'run.started',
        'run.settled',
      ]);
    }
  }, 600_000);
});
