// The Kubernetes driver's own behaviour beyond the contract: watch (not poll), resumption and 410
// re-list, exec protocol fallback, forced delete, reap after a kill -9, network isolation, restricted pods.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import { PlacementError, type SandboxHandle, utf8 } from '@everdict/placement';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NETWORK_POLICY } from '../src/index.js';
import { ChildProcessRunner } from '../src/testing/index.js';
import { CALM_REQUEST_TIMEOUT_MS, DriverFixture } from './fixture.js';

// none of these tests is about a request deadline: a starved event loop must not fail their requests
const calm = { requestTimeoutMs: CALM_REQUEST_TIMEOUT_MS };
const labels = (runId: string, tenant = 'acme') => ({ labels: { tenant, runId, kind: 'command' } });
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((r) => setTimeout(r, 20));
}

describe('the driver against the default test server (bubblewrap pods)', () => {
  let f: DriverFixture;
  beforeAll(async () => {
    f = await DriverFixture.start();
  });
  afterAll(async () => {
    await f?.close();
  });

  it('follows pod phases through one list and a watch, never by polling a pod', async () => {
    const d = await f.driver({ ...calm, slots: 4 });
    const ns = d.config.capacityNamespaces[0] as string;
    const h = await d.provision(labels('watched'));
    expect((await d.exec(h, ['true'])).exitCode).toBe(0);
    await d.dispose(h);
    const pods = f.server.requests.filter((r) => r.path.startsWith(`/api/v1/namespaces/${ns}/pods`));
    expect(
      pods.filter((r) => r.method === 'GET' && r.path === `/api/v1/namespaces/${ns}/pods/${h.id}`),
    ).toEqual([]);
    expect(
      pods.filter((r) => r.method === 'GET' && r.path.endsWith('/pods') && !r.query.includes('watch=true')),
    ).toHaveLength(1);
    const watches = pods.filter((r) => r.query.includes('watch=true'));
    expect(watches.length).toBeGreaterThanOrEqual(1);
    expect(watches[0]?.query).toContain('allowWatchBookmarks=true');
    await d.close();
  });

  it('resumes an ended watch from the last resourceVersion it saw, and takes bookmarks', async () => {
    const d = await f.driver({ ...calm, slots: 4 });
    const ns = d.config.capacityNamespaces[0] as string;
    const h = await d.provision(labels('resumed'));
    const watch = await d.podsIn(ns);
    await until(() => watch.stats.bookmarks > 0);
    const before = { ...watch.stats };
    const watchRequests = () =>
      f.server.requests.filter(
        (r) => r.path === `/api/v1/namespaces/${ns}/pods` && r.query.includes('watch=true'),
      );
    const sent = watchRequests().length;
    const seen = watch.version;
    f.server.endWatches();
    await until(() => watchRequests().length > sent);
    expect(watch.stats.lists).toBe(before.lists);
    expect(new URLSearchParams(watchRequests().at(-1)?.query).get('resourceVersion')).toBe(seen);
    const podVersion = Number(f.server.getObject('v1', 'pods', ns, h.id)?.metadata.resourceVersion);
    expect(Number(seen)).toBeGreaterThanOrEqual(podVersion);
    await d.dispose(h); // completes only if the resumed watch delivers the DELETED event
    expect(watch.get(h.id)).toBeUndefined();
    await d.close();
  });

  it('re-lists after 410 Expired (a compacted resourceVersion) and keeps following', async () => {
    const d = await f.driver({ ...calm, slots: 4 });
    const ns = d.config.capacityNamespaces[0] as string;
    const h = await d.provision(labels('expired'));
    const watch = await d.podsIn(ns);
    const before = { ...watch.stats };
    // an unrelated change moves the store past what the driver saw; compacting then makes its version stale
    // (a bookmark landing in between would keep it current, so try again until the 410 is seen)
    for (let i = 0; watch.stats.expired === before.expired; i++) {
      await f.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: `bump-${i}` } } });
      f.server.compact();
      f.server.endWatches();
      await until(() => watch.stats.watches > before.watches + i);
    }
    await until(() => watch.stats.lists > before.lists);
    await d.dispose(h);
    expect(watch.get(h.id)).toBeUndefined();
    const other = await d.provision(labels('after-relist'));
    expect(utf8((await d.exec(other, ['sh', '-c', 'printf ok'])).stdout)).toBe('ok');
    await d.dispose(other);
    await d.close();
  });

  it('isolates network "none" with a NetworkPolicy; a grant reaches the host', async () => {
    const listener: Server = createServer((s) => {
      s.on('error', () => {}); // a probe's reset from inside a sandbox is expected, not a crash of the test
      s.end('hi');
    });
    await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
    const port = (listener.address() as { port: number }).port;
    const probe = [
      'python3',
      '-c',
      `import socket; socket.create_connection(("127.0.0.1", ${port}), 2); print("connected")`,
    ];
    const d = await f.driver({ ...calm, slots: 4 });
    const ns = d.config.capacityNamespaces[0] as string;
    const closed = await d.provision(labels('offline'));
    expect(f.server.getObject('networking.k8s.io/v1', 'networkpolicies', ns, NETWORK_POLICY)).toBeDefined();
    const refused = await d.exec(closed, probe);
    expect(refused.exitCode).not.toBe(0);
    const open = await d.provision({ ...labels('online'), network: 'granted' });
    const reached = await d.exec(open, probe);
    expect(utf8(reached.stdout)).toBe('connected\n');
    await d.dispose(closed);
    await d.dispose(open);
    await d.close();
    listener.close();
  });

  it('runs commands in a sandbox whose deadline is further away than a Node timer reaches (2^31 ms)', async () => {
    const d = await f.driver({ ...calm, slots: 4 });
    const h = await d.provision({
      ...labels('long-lived'),
      limits: { wallTimeoutMs: 30 * 24 * 3600 * 1000 },
    });
    expect(utf8((await d.exec(h, ['sh', '-c', 'printf still-running'])).stdout)).toBe('still-running');
    await d.dispose(h);
    await d.close();
  });

  it('provisions pods that pass restricted Pod Security, which refuses a privileged pod', async () => {
    const d = await f.driver({ ...calm, slots: 4 });
    const ns = d.config.capacityNamespaces[0] as string;
    const h = await d.provision(labels('restricted'));
    const pod = f.server.getObject('v1', 'pods', ns, h.id) as unknown as { spec: Record<string, unknown> };
    expect(pod.spec).toMatchObject({
      automountServiceAccountToken: false,
      restartPolicy: 'Never',
      activeDeadlineSeconds: 3600,
    });
    const bad = f.core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'privileged' },
        spec: { containers: [{ name: 'c', image: 'busybox:1.36', securityContext: { privileged: true } }] },
      },
    });
    await expect(bad).rejects.toMatchObject({ code: 403 });
    await d.dispose(h);
    await d.close();
  });

  it('reaps the sandboxes of a process killed with -9, by label, once its lease lapsed', async () => {
    const dist = fileURLToPath(new URL('../dist/index.js', import.meta.url));
    if (!existsSync(dist))
      throw new Error('build the package first: pnpm --filter @everdict/placement-kubernetes build');
    const ns = await f.namespace(8);
    const tenant = 'crashy';
    const child = spawn(process.execPath, [fileURLToPath(new URL('./holder.mjs', import.meta.url))], {
      env: {
        ...process.env,
        EVERDICT_TEST_KUBECONFIG: f.server.kubeconfig(),
        EVERDICT_TEST_NAMESPACE: ns,
        EVERDICT_TEST_TENANT: tenant,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    await until(() => out.includes('ready\n') || child.exitCode !== null);
    const handles = out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as SandboxHandle);
    expect(handles).toHaveLength(2);

    const reaper = await f.driver({ ...calm, namespace: ns, leaseDurationSeconds: 1 });
    expect(await reaper.reap({ labels: { tenant } })).toEqual([]); // the holder is alive: its lease is fresh
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    // the holder's 5 s lease lapses once nothing renews it: reap until it does (a condition, not a sleep)
    let commands = await reaper.reap({ labels: { tenant, kind: 'command' } });
    while (commands.length === 0) {
      await new Promise((r) => setTimeout(r, 100));
      commands = await reaper.reap({ labels: { tenant, kind: 'command' } });
    }
    expect(commands.map((r) => r.id)).toEqual([handles[0]?.id]);
    expect(commands[0]).toMatchObject({
      labels: { tenant, runId: 'held-1', kind: 'command' },
      removed: ['pod'],
    });
    const rest = await reaper.reap({ labels: { tenant } });
    expect(rest.map((r) => r.id)).toEqual([handles[1]?.id]);
    for (const h of handles) expect(f.server.getObject('v1', 'pods', ns, h.id)).toBeUndefined();
    await reaper.close();
  }, 600_000); // a second node process and its two pods on top: at load 30–40 past the 300 s default
});

describe('the driver against a v4-only, signal-faithful test server', () => {
  let f: DriverFixture;
  beforeAll(async () => {
    f = await DriverFixture.start({ execProtocols: ['v4.channel.k8s.io'], runner: new ChildProcessRunner() });
  });
  afterAll(async () => {
    await f?.close();
  });

  it('falls back to v4.channel.k8s.io, remembers it, and still ends stdin', async () => {
    const d = await f.driver({ ...calm, slots: 4 });
    const h = await d.provision(labels('v4'));
    const r = await d.exec(h, ['sh', '-c', 'cat; exit 4'], { stdin: 'through v4\n' });
    expect(r.exitCode).toBe(4);
    expect(utf8(r.stdout)).toBe('through v4\n');
    const path = `/api/v1/namespaces/${d.config.capacityNamespaces[0]}/pods/${h.id}/exec`;
    const upgrades = () => f.server.requests.filter((q) => q.upgrade && q.path === path).length;
    const afterFirst = upgrades();
    await d.exec(h, ['true']);
    expect(upgrades()).toBe(afterFirst + 1); // v4 straight away now
    await d.dispose(h);
    await d.close();
  });

  it('deletes with grace, then forced when the pod stays Terminating', async () => {
    const d = await f.driver({
      ...calm,
      slots: 4,
      terminationGracePeriodSeconds: 30,
      forceDeleteAfterMs: 300,
    });
    const ns = d.config.capacityNamespaces[0] as string;
    const h = await d.provision(labels('stuck'));
    f.server.stallNode(true);
    try {
      await d.dispose(h);
    } finally {
      f.server.stallNode(false);
    }
    const deletes = f.server.requests.filter(
      (q) => q.method === 'DELETE' && q.path === `/api/v1/namespaces/${ns}/pods/${h.id}`,
    );
    expect(deletes.map((q) => new URLSearchParams(q.query).get('gracePeriodSeconds'))).toEqual(['30', '0']);
    expect(f.server.getObject('v1', 'pods', ns, h.id)).toBeUndefined();
    await expect(d.exec(h, ['true'])).rejects.toBeInstanceOf(PlacementError);
    await d.close();
  });
});
