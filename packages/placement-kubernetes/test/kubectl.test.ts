// The test API server, proven faithful with a client nobody here wrote: the machine's kubectl (≥ 1.30;
// missing or older fails these tests). Every command below talks HTTPS + bearer token to the server.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApiServer, type TestApiServer } from '../src/testing/index.js';
import { Kubectl, requireKubectl } from './kubectl.js';

let server: TestApiServer;
let kubectl: Kubectl;

beforeAll(async () => {
  await requireKubectl();
  server = await startTestApiServer();
  kubectl = await Kubectl.for(server);
});

afterAll(async () => {
  await server?.close();
  await kubectl?.remove();
});

function pod(name: string, script: string, extra: Record<string, unknown> = {}) {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: { suite: 'kubectl' } },
    spec: {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 5,
      containers: [{ name: 'main', image: 'busybox:1.36', command: ['sh', '-c', script] }],
      ...extra,
    },
  });
}

/** Wait on a condition (no fixed sleeps): checks every 20 ms. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((r) => setTimeout(r, 20));
}

async function create(manifest: string): Promise<void> {
  const r = await kubectl.run(['create', '--validate=false', '-f', '-'], manifest);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
}

describe('kubectl against the test API server', () => {
  it('get pods -o json lists a created pod, and kubectl wait sees it Ready', async () => {
    await create(pod('listed', 'sleep 30'));
    const wait = await kubectl.run(['wait', '--for=condition=Ready', 'pod/listed', '--timeout=30s']);
    expect(wait.stdout).toContain('pod/listed condition met');
    const r = await kubectl.run(['get', 'pods', '-o', 'json']);
    expect(r.code).toBe(0);
    const list = JSON.parse(r.stdout) as {
      kind: string;
      items: {
        kind: string;
        metadata: { name: string };
        status: { phase: string; containerStatuses: { imageID: string }[] };
      }[];
    };
    expect(list.kind).toBe('List');
    const listed = list.items.find((i) => i.metadata.name === 'listed');
    expect(listed?.kind).toBe('Pod');
    expect(listed?.status.phase).toBe('Running');
    expect(listed?.status.containerStatuses[0]?.imageID).toMatch(
      /^docker\.io\/library\/busybox@sha256:[0-9a-f]{64}$/,
    );
    const table = await kubectl.run(['get', 'pod', 'listed']);
    expect(table.stdout).toMatch(
      /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\nlisted\s+1\/1\s+Running\s+0\s+\d+s\n$/,
    );
  });

  it('get pods --watch shows the phase changes of a pod as they happen', async () => {
    const before = server.openWatches;
    const watch = kubectl.start(['get', 'pods', '--watch', '-l', 'watched=yes']);
    await until(() => server.openWatches > before);
    await create(
      JSON.stringify({
        ...JSON.parse(pod('watched', 'sleep 0.3; exit 0')),
        metadata: { name: 'watched', labels: { watched: 'yes' } },
      }),
    );
    await watch.waitFor(/watched\s+0\/1\s+Completed/);
    await watch.stop();
    expect(watch.stdout).toMatch(/watched\s+\d\/1\s+(Pending|ContainerCreating)/);
    expect(watch.stdout).toMatch(/watched\s+1\/1\s+Running/);
  });

  it('logs -f streams a running container and ends when it stops', async () => {
    // the container prints line-1, then waits for a go-file that the test creates through exec (both
    // run in the pod's working directory). The exec stays running after its touch: the container stops on
    // the file and the kubelet kills a stopped container's execs (as a kubelet does), so it ends with 137
    // every time — an exec that ended right after its touch raced that kill (0 or 137, by the load).
    await create(pod('chatty', 'echo line-1; until [ -f go ]; do sleep 0.05; done; echo line-2'));
    await kubectl.run(['wait', '--for=condition=Ready', 'pod/chatty', '--timeout=30s']);
    const logs = kubectl.start(['logs', '-f', 'chatty']);
    let ended = false;
    void logs.closed.then(() => {
      ended = true;
    });
    await logs.waitFor(/line-1\n/);
    expect(ended).toBe(false);
    const touch = await kubectl.run(['exec', 'chatty', '--', 'sh', '-c', 'touch go; exec sleep 30']);
    expect(touch).toMatchObject({ code: 137, stderr: expect.stringContaining('exit code 137') });
    expect(await logs.closed).toBe(0);
    expect(logs.stdout).toBe('line-1\nline-2\n');
  });

  it('exec -i sends stdin, returns stdout and stderr, and propagates the exit code', async () => {
    await create(pod('shell', 'sleep 60'));
    await kubectl.run(['wait', '--for=condition=Ready', 'pod/shell', '--timeout=30s']);
    const r = await kubectl.run(
      ['exec', '-i', 'shell', '--', 'sh', '-c', 'cat; echo to-stderr >&2; exit 5'],
      'from stdin\nsecond line\n',
    );
    expect(r.stdout).toBe('from stdin\nsecond line\n');
    expect(r.stderr).toContain('to-stderr');
    expect(r.stderr).toContain('command terminated with exit code 5');
    expect(r.code).toBe(5);
    const ok = await kubectl.run(['exec', 'shell', '--', 'sh', '-c', 'echo fine']);
    expect(ok).toMatchObject({ code: 0, stdout: 'fine\n' });
    const upgrades = server.requests.filter((q) => q.upgrade && q.path.endsWith('/pods/shell/exec'));
    expect(upgrades.length).toBe(2);
  });

  it('delete pod removes it after its graceful stop', async () => {
    await create(pod('doomed', 'sleep 60'));
    await kubectl.run(['wait', '--for=condition=Ready', 'pod/doomed', '--timeout=30s']);
    const r = await kubectl.run(['delete', 'pod', 'doomed']);
    expect(r).toMatchObject({ code: 0, stdout: 'pod "doomed" deleted\n' });
    expect(server.getObject('v1', 'pods', 'default', 'doomed')).toBeUndefined();
    const gone = await kubectl.run(['get', 'pod', 'doomed']);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('pods "doomed" not found');
  });

  it('apply --validate=false -f creates a directory of manifests, then patches what changed', async () => {
    const dir = join(kubectl.dir, 'manifests');
    await mkdir(dir);
    await writeFile(
      join(dir, '00-namespace.yaml'),
      'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: everdict-runner\n',
    );
    await writeFile(
      join(dir, '10-rbac.yaml'),
      [
        'apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: runner\n  namespace: everdict-runner',
        'apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: runner\n  namespace: everdict-runner\nrules:\n- apiGroups: [""]\n  resources: ["pods", "pods/exec", "pods/log"]\n  verbs: ["create", "get", "list", "watch", "delete"]',
        'apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: runner\n  namespace: everdict-runner\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: runner\nsubjects:\n- kind: ServiceAccount\n  name: runner\n  namespace: everdict-runner',
      ].join('\n---\n'),
    );
    const deployment = (image: string, b: string) =>
      [
        'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: runner\n  namespace: everdict-runner\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: runner}\n  template:\n    metadata:\n      labels: {app: runner}\n    spec:\n      serviceAccountName: runner\n      containers:\n      - name: runner\n        image: ' +
          image +
          '\n        env:\n        - {name: A, value: "1"}\n        - {name: B, value: "' +
          b +
          '"}',
        'apiVersion: v1\nkind: Secret\nmetadata:\n  name: runner-token\n  namespace: everdict-runner\nstringData:\n  token: abc',
        'apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: deny-all\n  namespace: everdict-runner\nspec:\n  podSelector: {}\n  policyTypes: [Ingress, Egress]',
      ].join('\n---\n');
    await writeFile(join(dir, '20-runner.yaml'), deployment('ghcr.io/everdict/runner:0.1.0', '2'));

    const first = await kubectl.run(['apply', '--validate=false', '-f', dir]);
    expect(first.stderr).toBe('');
    expect(first.stdout.trim().split('\n')).toEqual([
      'namespace/everdict-runner created',
      'serviceaccount/runner created',
      'role.rbac.authorization.k8s.io/runner created',
      'rolebinding.rbac.authorization.k8s.io/runner created',
      'deployment.apps/runner created',
      'secret/runner-token created',
      'networkpolicy.networking.k8s.io/deny-all created',
    ]);
    expect(server.getObject('v1', 'secrets', 'everdict-runner', 'runner-token')?.data).toEqual({
      token: 'YWJj',
    });

    await writeFile(join(dir, '20-runner.yaml'), deployment('ghcr.io/everdict/runner:0.2.0', '3'));
    const second = await kubectl.run(['apply', '--validate=false', '-f', dir]);
    expect(second.stdout).toContain('deployment.apps/runner configured');
    expect(second.stdout).toContain('role.rbac.authorization.k8s.io/runner unchanged');
    const patches = server.requests.filter((q) => q.method === 'PATCH');
    // a Secret's stringData is write-only, so kubectl re-sends it on every apply (as against a real cluster)
    expect(patches.map((p) => [p.path, p.contentType])).toEqual([
      [
        '/apis/apps/v1/namespaces/everdict-runner/deployments/runner',
        'application/strategic-merge-patch+json',
      ],
      ['/api/v1/namespaces/everdict-runner/secrets/runner-token', 'application/strategic-merge-patch+json'],
    ]);
    const deploy = server.getObject('apps/v1', 'deployments', 'everdict-runner', 'runner') as unknown as {
      metadata: { generation: number };
      spec: { template: { spec: { containers: { image: string; env: unknown }[] } } };
    };
    expect(deploy.metadata.generation).toBe(2);
    expect(deploy.spec.template.spec.containers[0]).toMatchObject({
      image: 'ghcr.io/everdict/runner:0.2.0',
      env: [
        { name: 'A', value: '1' },
        { name: 'B', value: '3' },
      ],
    });
    const got = await kubectl.run([
      'get',
      'deployments,roles,rolebindings,serviceaccounts,networkpolicies',
      '-n',
      'everdict-runner',
      '-o',
      'name',
    ]);
    expect(got.stdout.trim().split('\n').sort()).toEqual([
      'deployment.apps/runner',
      'networkpolicy.networking.k8s.io/deny-all',
      'role.rbac.authorization.k8s.io/runner',
      'rolebinding.rbac.authorization.k8s.io/runner',
      'serviceaccount/runner',
    ]);
  });
});
