// A started core on a fresh test database, with a bootstrap admin principal.

import { type Core, startCore } from '../src/core.js';
import { declaredRunner } from '../src/executors/registry.js';
import type { CoreOptions } from '../src/services/index.js';
import type { Principal } from '../src/services/types.js';
import { type TestDatabase, testDatabase } from './db.js';

/**
 * The test deployment's executors beyond the built-in ones: a registered runner declaring command, eval
 * and sandbox that never comes online — runs of those kinds are accepted and stay queued (what a busy or
 * offline capable executor means). Pass `executors: []` for a deployment with no runner at all.
 */
export const OFFLINE_RUNNER = declaredRunner('test-runner (registered, offline)', {
  kinds: ['command', 'eval', 'sandbox'],
});

export const BOOTSTRAP_KEY = 'evk_test_bootstrap_key_000000000000';

export interface TestCore {
  core: Core;
  admin: Principal;
  /** The ledger it runs on (`url` on a live PostgreSQL: for a second connection). */
  database: TestDatabase;
  close(): Promise<void>;
}

export async function testCore(
  options: Omit<CoreOptions, 'database' | 'bootstrapKey'> & { poolSize?: number } = {},
): Promise<TestCore> {
  const { poolSize, ...coreOptions } = options;
  const database = await testDatabase(poolSize === undefined ? {} : { poolSize });
  const core = await startCore({
    executors: [OFFLINE_RUNNER],
    ...coreOptions,
    database,
    bootstrapKey: BOOTSTRAP_KEY,
    scheduler: { pollMs: 50, inlineTimeoutMs: 2_000, ...coreOptions.scheduler },
  });
  const admin = await core.services.auth.authenticate(BOOTSTRAP_KEY);
  return {
    core,
    admin,
    database,
    close: async () => {
      await core.close();
      await database.dispose().catch(() => undefined);
    },
  };
}

/** Poll until `check` returns a value (not undefined) or time runs out. */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 10_000,
  stepMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('eventually: timed out');
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
