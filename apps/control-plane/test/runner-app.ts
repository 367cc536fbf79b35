// A live-PostgreSQL core with the HTTP app on it, for the runner path's database tests: no scheduler (nothing
// claims but the runner calls a test makes), no executors, a trajectory store in a scratch directory.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildApp } from '../src/app.js';
import { type Core, startCore } from '../src/core.js';
import { ADMIN_KEY, INTERNAL_TOKEN } from '../src/http/testing/harness.js';
import { openTrajectoryStore } from '../src/trajectory/store.js';
import { type TestDatabase, testDatabase } from './db.js';

export interface RunnerApp {
  database: TestDatabase;
  core: Core;
  app: ReturnType<typeof buildApp>['app'];
  close(): Promise<void>;
}

export async function runnerApp(poolSize: number): Promise<RunnerApp> {
  const database = await testDatabase({ poolSize });
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cp-runner-app-'));
  const core = await startCore({
    database,
    trajectories: openTrajectoryStore({ dataDir }),
    bootstrapKey: ADMIN_KEY,
    executors: [],
    scheduler: { enabled: false },
  });
  const { app } = buildApp({
    services: core.services,
    health: () => core.health(),
    internalToken: INTERNAL_TOKEN,
    trajectories: core.trajectoryService,
  });
  return {
    database,
    core,
    app,
    close: async () => {
      await core.close();
      await database.dispose();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
