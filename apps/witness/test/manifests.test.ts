// deploy/kubernetes/witness/: parsed with @kubernetes/client-node's model types, the restricted Pod Security
// fields asserted, the ConfigMap read by the witness's own configuration parser, and the whole directory
// applied with `kubectl apply --validate=false` to the test API server of @everdict/placement-kubernetes.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestApiServer, type TestApiServer } from '@everdict/placement-kubernetes/testing';
import {
  loadAllYaml,
  type V1ConfigMap,
  type V1Deployment,
  type V1Namespace,
  type V1Secret,
  type V1Service,
  type V1ServiceAccount,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/index.js';

const DIR = fileURLToPath(new URL('../../../deploy/kubernetes/witness/', import.meta.url));
const NS = 'everdict-witness';

type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } };
const objects: Obj[] = readdirSync(DIR)
  .filter((f) => f.endsWith('.yaml'))
  .sort()
  .flatMap((f) => loadAllYaml(readFileSync(join(DIR, f), 'utf8')) as Obj[]);
function one<T>(kind: string): T {
  const found = objects.filter((o) => o.kind === kind);
  expect(found, kind).toHaveLength(1);
  return found[0] as T;
}

describe('deploy/kubernetes/witness', () => {
  it('has exactly the witness objects, in its own restricted namespace, with no API access', () => {
    expect(objects.map((o) => o.kind).sort()).toEqual(
      [
        'ConfigMap',
        'Deployment',
        'Namespace',
        'PersistentVolumeClaim',
        'Secret',
        'Service',
        'ServiceAccount',
      ].sort(),
    );
    for (const o of objects) if (o.kind !== 'Namespace') expect(o.metadata.namespace, o.kind).toBe(NS);
    expect(one<V1Namespace>('Namespace').metadata?.labels?.['pod-security.kubernetes.io/enforce']).toBe(
      'restricted',
    );
    expect(one<V1ServiceAccount>('ServiceAccount').automountServiceAccountToken).toBe(false);
    expect(objects.some((o) => o.kind.includes('Role'))).toBe(false);
  });

  it('the Deployment meets the restricted profile: one replica, Recreate, state on its volume only', () => {
    const d = one<V1Deployment>('Deployment');
    expect(d.spec?.replicas).toBe(1);
    expect(d.spec?.strategy?.type).toBe('Recreate');
    const pod = d.spec!.template.spec!;
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.hostNetwork ?? false).toBe(false);
    expect(pod.securityContext?.runAsNonRoot).toBe(true);
    expect(pod.securityContext?.runAsUser).toBeGreaterThan(0);
    expect(pod.securityContext?.seccompProfile?.type).toBe('RuntimeDefault');
    expect(pod.containers).toHaveLength(1);
    const c = pod.containers[0]!;
    const sc = c.securityContext!;
    expect(sc.allowPrivilegeEscalation).toBe(false);
    expect(sc.privileged ?? false).toBe(false);
    expect(sc.capabilities?.drop).toEqual(['ALL']);
    expect(sc.capabilities?.add ?? []).toEqual([]);
    expect(sc.readOnlyRootFilesystem).toBe(true);
    expect(sc.runAsNonRoot).toBe(true);
    expect(sc.seccompProfile?.type).toBe('RuntimeDefault');
    for (const v of pod.volumes ?? []) expect(v.hostPath, v.name).toBeUndefined();
    expect(pod.volumes?.find((v) => v.secret)?.secret?.secretName).toBe(
      one<V1Secret>('Secret').metadata?.name,
    );
    expect(pod.volumes?.find((v) => v.persistentVolumeClaim)?.persistentVolumeClaim?.claimName).toBe(
      'everdict-witness-state',
    );

    // The ConfigMap is what the witness reads: its paths are the mounts, its port the container's.
    const cm = one<V1ConfigMap>('ConfigMap');
    expect(c.envFrom?.[0]?.configMapRef?.name).toBe(cm.metadata?.name);
    const env = {
      ...cm.data,
      EVERDICT_WITNESS_LOGS: cm.data!.EVERDICT_WITNESS_LOGS!.replace(/REPLACE[-A-Z]*/, 'ab'.repeat(32)),
    };
    const config = parseConfig([], env);
    expect(config.logs).toEqual([{ url: 'https://everdict.example.internal', key: 'ab'.repeat(32) }]);
    const mounts = new Map(c.volumeMounts!.map((m) => [m.name, m]));
    expect(dirname(config.keyFile)).toBe(mounts.get('key')!.mountPath);
    expect(mounts.get('key')!.readOnly).toBe(true);
    expect(dirname(config.stateFile)).toBe(mounts.get('state')!.mountPath);
    expect(c.ports?.[0]?.containerPort).toBe(config.metricsPort);
    expect(one<V1Service>('Service').spec?.selector).toEqual({ 'app.kubernetes.io/component': 'witness' });
  });

  describe('applied with kubectl to the test API server', () => {
    let server: TestApiServer;
    let dir: string;
    beforeAll(async () => {
      server = await startTestApiServer();
      dir = mkdtempSync(join(tmpdir(), 'witness-kubectl-'));
    });
    afterAll(async () => {
      await server?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('kubectl apply --validate=false -f deploy/kubernetes/witness/ creates every object', async () => {
      const result = await server.kubectlApply(dir, NS, DIR);
      expect(result.code, result.out).toBe(0);
      const plural: Record<string, string> = { PersistentVolumeClaim: 'persistentvolumeclaims' };
      for (const o of objects) {
        const resource = plural[o.kind] ?? `${o.kind.toLowerCase()}s`;
        const stored = server.getObject(o.apiVersion, resource, o.metadata.namespace, o.metadata.name);
        expect(stored, `${o.kind}/${o.metadata.name}`).toBeDefined();
      }
      const d = server.getObject('apps/v1', 'deployments', NS, 'everdict-witness') as unknown as V1Deployment;
      expect(d.spec?.template.spec?.containers[0]?.securityContext?.readOnlyRootFilesystem).toBe(true);
    });
  });
});
