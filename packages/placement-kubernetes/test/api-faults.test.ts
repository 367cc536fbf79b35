// What a real cluster does that a healthy test server does not: an apiserver that never answers (every
// API call and the exec handshake have a deadline, and fail as PlacementError), a watch that ends with an
// ERROR other than 410 (retried after a pause, not in a hot loop), and a close while a watch request is on
// its way (its stream must not outlive the close).
import { PlacementError } from '@everdict/placement';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PodWatch } from '../src/index.js';
import { ChildProcessRunner } from '../src/testing/index.js';
import { DriverFixture } from './fixture.js';

const labels = (runId: string) => ({ labels: { tenant: 'acme', runId, kind: 'command' } });
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((r) => setTimeout(r, 20));
}

describe('the driver when the API server misbehaves', () => {
  let f: DriverFixture;
  beforeAll(async () => {
    f = await DriverFixture.start({ runner: new ChildProcessRunner() });
  });
  afterAll(async () => {
    f?.server.stallRequests(undefined);
    await f?.close();
  });

  it('aborts a watch whose request was on its way when close() was called', async () => {
    const ns = await f.namespace();
    const pending = () =>
      f.server.requests.some(
        (r) => r.path === `/api/v1/namespaces/${ns}/pods` && r.query.includes('watch=true'),
      );
    const watch = new PodWatch(f.kc, f.core, ns, 500, f.server.resourceVersion);
    watch.close(); // the watch request is already on its way (first test: no other watch is open)
    await until(() => pending() && f.server.openWatches === 0);
    expect(watch.stats.watches).toBe(1);
  });

  it('fails capacity() with spawn_failed when the quota list is never answered', async () => {
    // 1.5 s, not 300 ms: the list after the stall must be answered within it on a loaded machine too (300 ms
    // failed there: "The user aborted a request" on the second capacity())
    const d = await f.driver({ slots: 4, requestTimeoutMs: 1_500 });
    const ns = d.config.capacityNamespaces[0] as string;
    await d.podsIn(ns);
    f.server.stallRequests((r) => r.path === `/api/v1/namespaces/${ns}/resourcequotas`);
    try {
      await expect(d.capacity()).rejects.toMatchObject({ code: 'spawn_failed' });
    } finally {
      f.server.stallRequests(undefined);
    }
    expect((await d.capacity()).slotsTotal).toBe(4);
    await d.close();
  });

  it('fails an exec with spawn_failed when the exec upgrade is never answered', async () => {
    // 1.5 s, not 300 ms: the exec after the stall must connect within it on a loaded CI machine too
    const d = await f.driver({ slots: 4, requestTimeoutMs: 1_500 });
    const h = await d.provision(labels('hung-exec'));
    f.server.stallRequests((r) => r.upgrade);
    try {
      const refused = d.exec(h, ['true']);
      await expect(refused).rejects.toBeInstanceOf(PlacementError);
      await expect(refused).rejects.toMatchObject({ code: 'spawn_failed' });
    } finally {
      f.server.stallRequests(undefined);
    }
    expect((await d.exec(h, ['true'])).exitCode).toBe(0);
    await d.dispose(h);
    await d.close();
  });

  it('fails dispose with a PlacementError when the delete is never answered; a retry removes the pod', async () => {
    // 1.5 s, as above: the provision and the retried delete are answered within it on a loaded machine too
    const d = await f.driver({ slots: 4, requestTimeoutMs: 1_500 });
    const ns = d.config.capacityNamespaces[0] as string;
    const h = await d.provision(labels('hung-delete'));
    f.server.stallRequests((r) => r.method === 'DELETE' && r.path.endsWith(`/pods/${h.id}`));
    try {
      const refused = d.dispose(h);
      await expect(refused).rejects.toBeInstanceOf(PlacementError);
      await expect(refused).rejects.toMatchObject({ code: 'spawn_failed' });
    } finally {
      f.server.stallRequests(undefined);
    }
    await d.dispose(h);
    expect(f.server.getObject('v1', 'pods', ns, h.id)).toBeUndefined();
    await d.close();
  });

  it('reports oom for the command the OOM killer ended, though the pod status comes after the exec ended', async () => {
    const d = await f.driver({ slots: 4 });
    const ns = d.config.capacityNamespaces[0] as string;
    const h = await d.provision(labels('oom-killed'));
    f.server.statusLagMs = 500; // as a kubelet's PLEG: the exec ends (137) before the status says why
    try {
      const hog = d.exec(h, ['sh', '-c', 'touch started; sleep 30']);
      hog.catch(() => undefined);
      while ((await d.exec(h, ['test', '-e', 'started'])).exitCode !== 0);
      expect(f.server.oomKill(ns, h.id, 'sandbox')).toBe(true);
      await expect(hog).rejects.toMatchObject({ code: 'oom' });
    } finally {
      f.server.statusLagMs = 0;
    }
    await d.dispose(h);
    await d.close();
  });

  it('retries a watch that ends with an ERROR other than 410 after a pause, not at once', async () => {
    const d = await f.driver({ slots: 4 });
    const ns = d.config.capacityNamespaces[0] as string;
    const watch = await d.podsIn(ns);
    const watches = () =>
      f.server.requests.filter(
        (r) => r.path === `/api/v1/namespaces/${ns}/pods` && r.query.includes('watch=true'),
      ).length;
    await until(() => watches() > 0 && f.server.openWatches > 0);
    const expired = watch.stats.expired;
    f.server.failWatches({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message:
        'an error on the server ("etcdserver: leader changed") has prevented the request from succeeding',
      reason: 'InternalError',
      code: 500,
    });
    const sent = watches();
    const started = Date.now();
    try {
      f.server.endWatches(); // the clean end resumes at once; each failed resumption waits retryMs (500)
      await until(() => watches() >= sent + 3);
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    } finally {
      f.server.failWatches(undefined);
    }
    expect(watch.stats.expired).toBe(expired); // not a 410: no re-list
    const h = await d.provision(labels('after-errors')); // the watch recovered: provision sees Running
    await d.dispose(h);
    await d.close();
  });
});

describe('the driver on a cluster with no room for the pod', () => {
  let f: DriverFixture;
  beforeAll(async () => {
    f = await DriverFixture.start({ runner: new ChildProcessRunner(), nodeAllocatable: { memory: '1Gi' } });
  });
  afterAll(async () => {
    await f?.close();
  });

  it("refuses with capacity and the scheduler's words when the pod stays Unschedulable; the pod is removed", async () => {
    const d = await f.driver({ slots: 4, startTimeoutMs: 3_000 });
    const ns = d.config.capacityNamespaces[0] as string;
    const big = d.provision({ ...labels('too-big'), limits: { memoryBytes: 2 * 1024 ** 3 } });
    await expect(big).rejects.toMatchObject({
      code: 'capacity',
      message: expect.stringContaining('0/1 nodes are available: 1 Insufficient memory.'),
    });
    const pods = await f.core.listNamespacedPod({ namespace: ns });
    expect(pods.items).toEqual([]);
    const fits = await d.provision({ ...labels('fits'), limits: { memoryBytes: 256 * 1024 ** 2 } });
    expect((await d.exec(fits, ['true'])).exitCode).toBe(0);
    await d.dispose(fits);
    await d.close();
  });
});
