// The placement driver contract suite (@everdict/placement/contract) on the Kubernetes driver, against the
// test API server: pods really run (child processes as uid 65532), in namespaces enforcing restricted Pod
// Security, with capacity from a ResourceQuota. The pod log lags what containers wrote (`logLagMs`), as a
// node's log pipeline does: the suite's read-after-exec of the log must not depend on the pod log.
import { describeDriverContract, posixCommands } from '@everdict/placement/contract';
import { afterAll, beforeAll } from 'vitest';
import type { KubernetesDriver } from '../src/index.js';
import { DriverFixture, MISSING_IMAGE } from './fixture.js';

let fixture: DriverFixture;
beforeAll(async () => {
  fixture = await DriverFixture.start();
  fixture.server.logLagMs = 250;
});
afterAll(async () => {
  await fixture?.close();
});

describeDriverContract('kubernetes', {
  make: ({ slots }) => fixture.driver({ slots: slots ?? 8 }),
  close: (driver) => fixture.closeDriver(driver as KubernetesDriver),
  commands: posixCommands,
  missingImage: MISSING_IMAGE,
});
