// The sandbox's disk, as the pod reaches the API server: the workspace emptyDir carries a sizeLimit and the
// container an ephemeral-storage request = limit (without them a run could fill its node's disk). Read back
// through client-node from the test API server, so the quantities are the wire's strings.
import { PlacementError, type SandboxHandle } from '@everdict/placement';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubernetesDriver } from '../src/index.js';
import { ChildProcessRunner } from '../src/testing/index.js';
import { DriverFixture } from './fixture.js';

const labels = (runId: string) => ({ tenant: 'acme', runId, kind: 'command' });

function diskOf(pod: V1Pod) {
  const workspace = pod.spec?.volumes?.find((v) => v.name === 'workspace');
  const resources = pod.spec?.containers[0]?.resources;
  return {
    sizeLimit: workspace?.emptyDir?.sizeLimit,
    limit: resources?.limits?.['ephemeral-storage'],
    request: resources?.requests?.['ephemeral-storage'],
  };
}

describe('sandbox disk', () => {
  let f: DriverFixture;
  beforeAll(async () => {
    f = await DriverFixture.start({ runner: new ChildProcessRunner() });
  });
  afterAll(async () => {
    await f?.close();
  });

  async function provisioned(d: KubernetesDriver, runId: string): Promise<V1Pod> {
    const h = await d.provision({ labels: labels(runId) });
    try {
      // the bounded workspace is still the sandbox's working directory
      expect((await d.exec(h, ['sh', '-c', 'echo x > f && cat f'])).exitCode).toBe(0);
      return await f.core.readNamespacedPod({ namespace: d.config.namespaceFor('acme'), name: h.id });
    } finally {
      await d.dispose(h);
    }
  }

  it('bounds the workspace and the pod by twice snapshotMaxBytes by default (1Gi)', async () => {
    const d = await f.driver({ slots: 2 });
    try {
      expect(d.config.diskBytes).toBe(2 * d.config.snapshotMaxBytes);
      const pod = await provisioned(d, 'disk-default');
      expect(diskOf(pod)).toEqual({ sizeLimit: '1Gi', limit: '1Gi', request: '1Gi' });
    } finally {
      await d.close();
    }
  });

  it('takes the disk from diskBytes, or from snapshotMaxBytes when diskBytes is not set', async () => {
    const a = await f.driver({ slots: 2, diskBytes: 300 * 1024 * 1024 });
    const b = await f.driver({ slots: 2, snapshotMaxBytes: 1_000_000 });
    try {
      expect(diskOf(await provisioned(a, 'disk-configured'))).toEqual({
        sizeLimit: '300Mi',
        limit: '300Mi',
        request: '300Mi',
      });
      expect(diskOf(await provisioned(b, 'disk-from-snapshot'))).toEqual({
        sizeLimit: '2000000',
        limit: '2000000',
        request: '2000000',
      });
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('counts an ephemeral-storage quota in capacity(), and refuses the provision past it as capacity', async () => {
    const ns = await f.namespace();
    await f.core.createNamespacedResourceQuota({
      namespace: ns,
      body: { metadata: { name: 'disk' }, spec: { hard: { 'requests.ephemeral-storage': '2500Mi' } } },
    });
    const d = await f.driver({ namespace: ns, diskBytes: 1024 ** 3 });
    const held: SandboxHandle[] = [];
    try {
      // 2500Mi holds two sandboxes of 1Gi, not the 16 of the driver's cap
      expect(await d.capacity()).toMatchObject({ slotsTotal: 2, slotsFree: 2 });
      held.push(await d.provision({ labels: labels('quota-a') }));
      held.push(await d.provision({ labels: labels('quota-b') }));
      expect(await d.capacity()).toMatchObject({ slotsTotal: 2, slotsFree: 0 });
      const refused = await d.provision({ labels: labels('quota-c') }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(PlacementError);
      expect(refused).toMatchObject({ code: 'capacity', detail: { namespace: ns, slotsFree: 0 } });
      const pods = await f.core.listNamespacedPod({ namespace: ns });
      expect(pods.items.map((p) => p.metadata?.name).sort()).toEqual(held.map((h) => h.id).sort());
    } finally {
      for (const h of held) await d.dispose(h);
      await d.close();
    }
  });
});
