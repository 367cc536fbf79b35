// Test helpers: the real app on the real core (a PGlite loaded from the run's migrated template per app; live PostgreSQL with
// EVERDICT_TEST_DATABASE_URL), called in-process. No fake services: every refusal is the core's own.

import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TenantPolicyInput } from '@everdict/admission';
import { sql } from 'kysely';
import { OFFLINE_RUNNER } from '../../../test/core.js';
import { testDatabase } from '../../../test/db.js';
import { type BuiltApp, buildApp } from '../../app.js';
import { consoleSource } from '../../console/source.js';
import { type Core, startCore } from '../../core.js';
import type { ExecutorLane } from '../../executors/registry.js';
import { createMetrics, type Metrics } from '../../observability/metrics.js';
import type { ControlPlaneServices } from '../../services/api.js';
import { ensureTenant } from '../../services/auth.js';
import { DEFAULT_POLICY, type SchedulerOptions } from '../../services/index.js';
import { openTrajectoryStore } from '../../trajectory/store.js';

export const ADMIN_KEY = 'evd_test_admin_key_0123456789abcdef';
export const INTERNAL_TOKEN = 'internal-token-0123456789abcdef';
export const METRICS_TOKEN = 'metrics-token-0123456789abcdef';

export interface TestApp extends BuiltApp {
  readonly core: Core;
  readonly metrics: Metrics;
  /** A new key of tenant `default` (`member` or `admin`). */
  key(role?: 'member' | 'admin'): Promise<string>;
  /**
   * A new tenant; answers its first admin key. With `policy`, the tenant's admission policy is set the way
   * the core sets every tenant's (`ensureTenant` → `configureTenant`), so one core serves many policies.
   */
  tenant(id: string, policy?: TenantPolicyInput): Promise<string>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  readonly policy?: TenantPolicyInput;
  /** Default: the scheduler does not run (runs stay queued); pass options to run it. */
  readonly scheduler?: SchedulerOptions;
  readonly maxBodyBytes?: number;
  readonly heartbeatMs?: number;
  readonly metricsToken?: string;
  /** Wrap the core's services (e.g. to make one method throw what no input can). */
  readonly wrap?: (services: ControlPlaneServices) => ControlPlaneServices;
  /** Executors beyond the built-in ones. Default: OFFLINE_RUNNER (command/eval/sandbox queue); `[]`: none. */
  readonly executors?: readonly ExecutorLane[];
  /** The core's clock (fake time; default: the wall clock). */
  readonly clock?: () => Date;
  /** The trajectory store's data directory (default: a fresh temporary one, removed on close). */
  readonly dataDir?: string;
  /** The head log (issue 18 §2); absent → no `/log` routes. */
  readonly headLog?: import('../../log/index.js').StartHeadLogOptions;
  /** The agent service's options (e.g. `requirePaired`: EVERDICT_AGENT_REQUIRE_PAIRED=1). */
  readonly agents?: import('../../services/options.js').CoreOptions['agents'];
  /** The vacuum keeper's options (absent: no keeper). */
  readonly vacuum?: import('../../services/options.js').CoreOptions['vacuum'];
  /** The largest artifact a runner may upload (absent: the core's default). */
  readonly artifactMaxBytes?: number;
}

export async function testApp(opts: TestAppOptions = {}): Promise<TestApp> {
  const metrics = createMetrics();
  const database = await testDatabase();
  const ownDir = opts.dataDir === undefined;
  const dataDir = opts.dataDir ?? mkdtempSync(path.join(os.tmpdir(), 'cp-trajectories-'));
  const core = await startCore({
    database,
    trajectories: openTrajectoryStore({
      dataDir,
      tailPollMs: 50,
      ...(opts.clock ? { now: opts.clock } : {}),
    }),
    ...(opts.clock ? { clock: opts.clock } : {}),
    bootstrapKey: ADMIN_KEY,
    executors: opts.executors ?? [OFFLINE_RUNNER],
    ...(opts.policy ? { policy: opts.policy } : {}),
    scheduler: opts.scheduler ?? { enabled: false },
    metrics: metrics.coreObserver(),
    ...(opts.headLog ? { headLog: opts.headLog } : {}),
    ...(opts.agents ? { agents: opts.agents } : {}),
    ...(opts.vacuum ? { vacuum: opts.vacuum } : {}),
    ...(opts.artifactMaxBytes === undefined ? {} : { artifactMaxBytes: opts.artifactMaxBytes }),
  });
  metrics.setQueueDepthSource(() => core.queueDepth());
  const built = buildApp({
    services: opts.wrap ? opts.wrap(core.services) : core.services,
    metrics,
    health: () => core.health(),
    keys: () => core.keys.list(),
    internalToken: INTERNAL_TOKEN,
    metricsToken: opts.metricsToken,
    maxBodyBytes: opts.maxBodyBytes ?? 64 * 1024,
    heartbeatMs: opts.heartbeatMs ?? 50,
    trajectories: core.trajectoryService,
    console: consoleSource(core),
    headLog: core.headLog,
  });
  const admin = await core.services.auth.authenticate(ADMIN_KEY);
  return {
    ...built,
    core,
    metrics,
    key: async (role = 'member') => (await core.services.auth.createKey(admin, { role })).key,
    tenant: async (id, policy) => {
      const key = (await core.services.auth.createTenant(admin, { id })).key.key;
      if (policy) {
        const deps = core.internals.deps;
        await ensureTenant(deps, id, id, { ...DEFAULT_POLICY, ...opts.policy, ...policy });
      }
      return key;
    },
    close: async () => {
      await core.close();
      await database.dispose().catch(() => undefined);
      if (ownDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export type Fetcher = { request(input: string, init?: RequestInit): Response | Promise<Response> };

/** A JSON call with an API key; returns status, content-type and the parsed body. */
export async function call(
  app: Fetcher,
  method: string,
  path: string,
  opts: { key?: string | null; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; type: string; body: Record<string, unknown>; headers: Headers }> {
  const headers: Record<string, string> = { ...opts.headers };
  const key = opts.key === undefined ? ADMIN_KEY : opts.key;
  if (key) headers.authorization = `Bearer ${key}`;
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await app.request(path, { method, headers, ...(body === undefined ? {} : { body }) });
  const type = res.headers.get('content-type') ?? '';
  const text = await res.text();
  let parsed: Record<string, unknown> = {};
  if (type.includes('json') && text) parsed = JSON.parse(text) as Record<string, unknown>;
  return { status: res.status, type, body: parsed, headers: res.headers };
}

/** A command run (`true`, `spec`'s fields over it) created by the admin; throws unless `POST /runs` is 201. */
export async function commandRun(
  app: Fetcher,
  spec: Record<string, unknown> = {},
): Promise<{ id: string; status: string; expiresAt?: string }> {
  const r = await call(app, 'POST', '/runs', {
    body: { kind: 'command', subject: { command: ['true'] }, ...spec },
  });
  if (r.status !== 201) throw new Error(`POST /runs answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body.run as { id: string; status: string; expiresAt?: string };
}

/** A call to `/internal/*` with the service token, acting inside `tenant` (the agent service's calls). */
export function callInternal(app: Fetcher, method: string, path: string, body?: unknown, tenant = 'default') {
  const headers = { authorization: `Bearer ${INTERNAL_TOKEN}`, 'x-everdict-tenant': tenant };
  return call(app, method, path, { key: null, body, headers });
}

/** Poll until `check` returns a value (not undefined) or time runs out. */
export async function until<T>(what: string, check: () => Promise<T | undefined>, ms = 90_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A command spec any test tenant can create (the offline runner accepts it; it stays queued). */
export const COMMAND_SPEC = {
  kind: 'command',
  subject: { path: 'x', image: 'alpine:3.20', command: ['true'] },
};

/** How many runs `tenant` has in the ledger (a refused operation must leave it as it was). */
export async function runsOf(t: TestApp, tenant: string): Promise<number> {
  const { rows } = await sql<{
    n: string;
  }>`SELECT count(*) AS n FROM runs WHERE tenant_id = ${tenant}`.execute(t.core.internals.deps.db);
  return Number(rows[0]?.n);
}
