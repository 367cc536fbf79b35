// Runnable: `pnpm --filter @everdict/placement-kubernetes build && node packages/placement-kubernetes/examples/quickstart.mjs`
// (a test runs it too). It starts the test API server (no cluster needed); against a real cluster, leave
// `kubeConfig` out and the driver loads KUBECONFIG, ~/.kube/config or the in-cluster service account.
// In your code, import from '@everdict/placement-kubernetes' and '@everdict/placement-kubernetes/testing'.
import { KubeConfig } from '@kubernetes/client-node';
import { KubernetesDriver } from '../dist/index.js';
import { startTestApiServer } from '../dist/testing/index.js';

const server = await startTestApiServer({ namespaces: ['acme'] });
const kubeConfig = new KubeConfig();
kubeConfig.loadFromString(server.kubeconfig('acme'));
const driver = new KubernetesDriver({ kubeConfig, namespace: 'acme' });

const handle = await driver.provision({ labels: { tenant: 'acme', runId: 'run-1', kind: 'command' } });
const result = await driver.exec(handle, ['sh', '-c', 'echo hello > greeting.txt && cat greeting.txt']);
console.log(result.exitCode, Buffer.from(result.stdout).toString().trim());
const snapshot = await driver.snapshot(handle);
console.log(snapshot.address.length, (await driver.capacity()).slotsFree);
await driver.dispose(handle);
await driver.close();
await server.close();
