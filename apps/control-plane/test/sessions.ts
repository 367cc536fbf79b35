// Test helpers for sessions: the real app on the real core with the embedded process placement (real
// bubblewrap sandboxes on a fresh state directory), PGlite by default, live PostgreSQL with
// EVERDICT_TEST_DATABASE_URL. A mutable clock offset lets a test move time forward (tickets, deadlines).
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type TenantPolicyInput, tenantPolicy } from '@everdict/admission';
import { ProcessDriver } from '@everdict/placement-process';
import { PgAdmissionStore } from '../src/admission-store/sql/store.js';
import { type BuiltApp, buildApp } from '../src/app.js';
import { type Core, startCore } from '../src/core.js';
import type { LedgerDatabase } from '../src/db/database.js';
import { openTrajectoryStore } from '../src/trajectory/store.js';
import { testDatabase } from './db.js';

export const SESSION_ADMIN_KEY = 'evd_test_sessions_admin_0123456789abcdef';

export interface SessionTestApp extends BuiltApp {
  readonly core: Core;
  readonly driver: ProcessDriver;
  readonly stateDir: string;
  readonly dataDir: string;
  /** Moves this core's clock forward. */
  advance(ms: number): void;
  key(role?: 'member' | 'admin'): Promise<string>;
  /** A new tenant with its own admission policy (session pool, price, budget); answers its admin key. */
  tenant(id: string, policy?: TenantPolicyInput): Promise<string>;
  close(): Promise<void>;
}

/** A directory the sandbox user may pass through (0711), as the driver's state directory's parents must be. */
export function passableDir(prefix: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  chmodSync(dir, 0o711);
  return dir;
}

/** Label files (one per live sandbox) left in a process driver's state directory. */
export function sandboxesIn(stateDir: string): string[] {
  const dir = path.join(stateDir, 'sandboxes');
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.json')) : [];
}

/** The run ids of the sandboxes a process driver's state directory holds (from their label files). */
export function sandboxRuns(stateDir: string): string[] {
  return sandboxesIn(stateDir).flatMap((f) => {
    try {
      const r = JSON.parse(readFileSync(path.join(stateDir, 'sandboxes', f), 'utf8')) as {
        handle: { labels: { runId: string } };
      };
      return [r.handle.labels.runId];
    } catch {
      return [];
    }
  });
}

/** Workspaces left in a process driver's state directory. */
export function workspacesIn(stateDir: string): string[] {
  const dir = path.join(stateDir, 'workspaces');
  return existsSync(dir) ? readdirSync(dir) : [];
}

export async function sessionTestApp(
  opts: {
    database?: LedgerDatabase;
    stateDir?: string;
    dataDir?: string;
    sweepMs?: number;
    sweep?: boolean;
    /** How far apart the reaper's fallback sweeps fall while alone (default 5 s: `scheduler.alonePollMs`). */
    alonePollMs?: number;
    trajectoryCapBytes?: number;
    policy?: TenantPolicyInput;
  } = {},
): Promise<SessionTestApp> {
  const database = opts.database ?? (await testDatabase());
  const own = opts.database === undefined;
  const root = passableDir('cp-sessions-');
  const stateDir = opts.stateDir ?? path.join(root, 'state');
  const dataDir = opts.dataDir ?? path.join(root, 'data');
  const driver = new ProcessDriver({ stateDir, imagesDir: path.join(root, 'images') });
  let offset = 0;
  const clock = () => new Date(Date.now() + offset);
  const core = await startCore({
    database,
    clock,
    trajectories: openTrajectoryStore({ dataDir, tailPollMs: 50, now: clock }),
    bootstrapKey: SESSION_ADMIN_KEY,
    executors: [],
    scheduler: {
      enabled: false,
      ...(opts.alonePollMs === undefined ? {} : { alonePollMs: opts.alonePollMs }),
    },
    ...(opts.policy ? { policy: opts.policy } : {}),
    sessions: {
      driver,
      sweep: opts.sweep ?? true,
      reaper: { sweepMs: opts.sweepMs ?? 200 },
      ...(opts.trajectoryCapBytes ? { trajectoryCapBytes: opts.trajectoryCapBytes } : {}),
    },
  });
  const built = buildApp({
    services: core.services,
    health: () => core.health(),
    trajectories: core.trajectoryService,
  });
  const admin = await core.services.auth.authenticate(SESSION_ADMIN_KEY);
  return {
    ...built,
    core,
    driver,
    stateDir,
    dataDir,
    advance: (ms) => {
      offset += ms;
    },
    key: async (role = 'member') => (await core.services.auth.createKey(admin, { role })).key,
    tenant: async (id, policy) => {
      const key = (await core.services.auth.createTenant(admin, { id })).key.key;
      if (policy) await new PgAdmissionStore(core.internals.deps.db).putTenant(id, tenantPolicy(policy));
      return key;
    },
    close: async () => {
      await core.close();
      if (own) await (database as { dispose?: () => Promise<void> }).dispose?.().catch(() => undefined);
      // the scaffolds made ahead (directories, cgroups): not left for another driver's sweep
      driver.drainReadyPool();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** A parsed JSON answer, read loosely by tests (the schemas are checked elsewhere). */
// biome-ignore lint/suspicious/noExplicitAny: test-side JSON access
export type Json = Record<string, any>;
