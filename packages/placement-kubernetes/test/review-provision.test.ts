// Provision against what a configured cluster really does: a namespace per tenant (a function) with no
// capacityNamespaces, and refusals whose clean-up delete gets no answer (the refusal still says why, and
// the pod left behind is this instance's orphan, which reap removes).
import { PlacementError } from '@everdict/placement';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubernetesDriver } from '../src/index.js';
import { ChildProcessRunner } from '../src/testing/index.js';
import { DriverFixture, MISSING_IMAGE } from './fixture.js';

const labels = (runId: string) => ({ tenant: 'acme', runId, kind: 'command' });

describe('provision (review)', () => {
  let f: DriverFixture;
  beforeAll(async () => {
    f = await DriverFixture.start({ runner: new ChildProcessRunner() });
  });
  afterAll(async () => {
    f?.server.stallRequests(undefined);
    await f?.close();
  });

  it('provisions into a per-tenant namespace (a function) when no capacityNamespaces are configured', async () => {
    const ns = await f.namespace(2);
    const d = new KubernetesDriver({
      kubeConfig: f.kc,
      namespace: () => ns,
      terminationGracePeriodSeconds: 2,
      leaseDurationSeconds: 2,
    });
    try {
      const h = await d.provision({ labels: labels('per-tenant') });
      expect((await d.exec(h, ['sh', '-c', 'echo ok'])).exitCode).toBe(0);
      expect(f.server.getObject('v1', 'pods', ns, h.id)).toBeDefined();
      await d.dispose(h);
      // its quota (2 pods) still binds provision in that namespace
      const a = await d.provision({ labels: labels('q-a') });
      const b = await d.provision({ labels: labels('q-b') });
      await expect(d.provision({ labels: labels('q-c') })).rejects.toMatchObject({ code: 'capacity' });
      await d.dispose(a);
      await d.dispose(b);
    } finally {
      await d.close();
    }
  });

  it('refuses image_not_found (a PlacementError) when the clean-up delete gets no answer; reap removes the pod', async () => {
    // 1.5 s: the stalled delete fails within it; answered requests are answered well within it under load
    const d = await f.driver({ slots: 4, requestTimeoutMs: 1_500 });
    const ns = d.config.capacityNamespaces[0] as string;
    f.server.stallRequests(
      (r) => r.method === 'DELETE' && r.path.startsWith(`/api/v1/namespaces/${ns}/pods/`),
    );
    let refusal: unknown;
    try {
      refusal = await d.provision({ image: MISSING_IMAGE, labels: labels('unpullable') }).catch((e) => e);
    } finally {
      f.server.stallRequests(undefined);
    }
    expect(refusal).toBeInstanceOf(PlacementError);
    expect(refusal).toMatchObject({ code: 'image_not_found', detail: { cleanup: 'left_for_reap' } });
    const id = (refusal as PlacementError).detail.pod as string;
    expect(f.server.getObject('v1', 'pods', ns, id)).toBeDefined();
    const reaped = await d.reap({ labels: { tenant: 'acme' } });
    expect(reaped.map((r) => r.id)).toEqual([id]);
    expect(f.server.getObject('v1', 'pods', ns, id)).toBeUndefined();
    await d.close();
  });

  it('answers a failed seeding with its own error when the dispose after it fails too; reap removes the pod', async () => {
    const d = await f.driver({ slots: 4, requestTimeoutMs: 1_500 });
    const ns = d.config.capacityNamespaces[0] as string;
    const source = await d.provision({ labels: labels('seed-source') });
    expect((await d.exec(source, ['sh', '-c', 'echo x > a'])).exitCode).toBe(0);
    const snapshot = await d.snapshot(source);
    await d.dispose(source);
    // `a` is a file in the snapshot: the directory a/b cannot be made
    f.server.stallRequests(
      (r) => r.method === 'DELETE' && r.path.startsWith(`/api/v1/namespaces/${ns}/pods/`),
    );
    let refusal: unknown;
    try {
      refusal = await d
        .provision({ labels: labels('seeded'), workspace: snapshot, directories: ['a/b'] })
        .catch((e) => e);
    } finally {
      f.server.stallRequests(undefined);
    }
    expect(refusal).toBeInstanceOf(PlacementError);
    expect(refusal).toMatchObject({ code: 'spawn_failed', detail: { exitCode: 1 } });
    expect((refusal as Error).message).toMatch(/directories could not be made/);
    const reaped = await d.reap({ labels: { tenant: 'acme', runId: 'seeded' } });
    expect(reaped).toHaveLength(1);
    await d.close();
  });
});
