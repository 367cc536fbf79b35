// Composition root of the ledger + application layer: open the database, bootstrap, services, scheduler.
import { type LedgerDatabase, openDatabase } from '../db/database.js';
import { DispatchLoop } from '../scheduler/dispatch-loop.js';
import { TriggerLoop } from '../scheduler/trigger-loop.js';
import { agentBridgeService } from './agent-bridge.js';
import type { ControlPlaneServices } from './api.js';
import { authService, ensureTenant, hashKey, insertKey } from './auth.js';
import { type Deps, defaultIds } from './context.js';
import { eventFeed } from './events-feed.js';
import { groupService } from './groups.js';
import { type CoreOptions, DEFAULT_POLICY } from './options.js';
import { runService } from './runs.js';
import { subscriptionService } from './subscriptions.js';

export interface Core {
  services: ControlPlaneServices;
  dialect: 'postgres' | 'pglite';
  /** Liveness of the ledger database. */
  health(): Promise<{ ok: boolean; dialect: 'postgres' | 'pglite' }>;
  /** Stops the scheduler loops (gracefully) and closes the database. */
  close(): Promise<void>;
  /** The ledger's internals, for tests and tooling (not for the HTTP layer). */
  internals: { deps: Deps; ldb: LedgerDatabase; dispatch: DispatchLoop | null; triggers: TriggerLoop | null };
}

export async function startCore(options: CoreOptions = {}): Promise<Core> {
  const ldb =
    options.database ?? (await openDatabase({ databaseUrl: options.databaseUrl, dataDir: options.dataDir }));
  const clock = options.clock ?? (() => new Date());
  const deps: Deps = {
    ldb,
    db: ldb.db,
    clock,
    ids: options.ids ?? defaultIds(clock),
    log: options.log ?? (() => undefined),
  };
  const policy = { ...DEFAULT_POLICY, ...options.policy };
  try {
    if (options.bootstrapKey) {
      await ensureTenant(deps, 'default', 'default', policy);
      const existing = await deps.db
        .selectFrom('api_keys')
        .select('id')
        .where('key_hash', '=', hashKey(options.bootstrapKey))
        .executeTakeFirst();
      if (!existing) await insertKey(deps, 'default', options.bootstrapKey, 'admin', 'bootstrap');
    }
  } catch (e) {
    await ldb.close();
    throw e;
  }
  const services: ControlPlaneServices = {
    auth: authService(deps, policy),
    runs: runService(deps),
    events: eventFeed(deps, options.scheduler?.pollMs ?? 1000),
    groups: groupService(deps),
    subscriptions: subscriptionService(deps),
    agentBridge: agentBridgeService(deps),
  };
  const sched = options.scheduler ?? {};
  let dispatch: DispatchLoop | null = null;
  let triggers: TriggerLoop | null = null;
  if (sched.enabled !== false) {
    dispatch = new DispatchLoop(deps, {
      pollMs: sched.pollMs ?? 1000,
      concurrency: sched.inlineConcurrency ?? 8,
      timeoutMs: sched.inlineTimeoutMs ?? 30_000,
    });
    triggers = new TriggerLoop(deps, sched.pollMs ?? 1000);
    await dispatch.start();
    await triggers.start();
  }
  return {
    services,
    dialect: ldb.dialect,
    async health() {
      try {
        await deps.db.selectFrom('tenants').select('id').limit(1).execute();
        return { ok: true, dialect: ldb.dialect };
      } catch {
        return { ok: false, dialect: ldb.dialect };
      }
    },
    async close() {
      await dispatch?.stop();
      await triggers?.stop();
      await ldb.close();
    },
    internals: { deps, ldb, dispatch, triggers },
  };
}
