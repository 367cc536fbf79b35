// A process that provisions sandboxes and then waits to be killed (kill -9 in the reap test): it prints
// each handle as one JSON line, then "ready". Needs the package built (dist/).
import { KubeConfig } from '@kubernetes/client-node';
import { KubernetesDriver } from '../dist/index.js';

const kc = new KubeConfig();
kc.loadFromString(process.env.EVERDICT_TEST_KUBECONFIG ?? '');
const driver = new KubernetesDriver({
  kubeConfig: kc,
  namespace: process.env.EVERDICT_TEST_NAMESPACE,
  pty: false,
  leaseDurationSeconds: 5, // 1 s lapsed between renewals at load average 30: the "owner alive" check then failed
  instanceId: 'holder',
  requestTimeoutMs: 120_000, // the test's server answers in the (possibly starved) test process
});
for (const [runId, kind] of [
  ['held-1', 'command'],
  ['held-2', 'eval'],
]) {
  const handle = await driver.provision({
    labels: { tenant: process.env.EVERDICT_TEST_TENANT, runId, kind },
  });
  process.stdout.write(`${JSON.stringify(handle)}\n`);
}
process.stdout.write('ready\n');
setInterval(() => {}, 1000);
