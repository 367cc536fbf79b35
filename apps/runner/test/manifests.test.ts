// deploy/kubernetes/: parsed with @kubernetes/client-node's model types, the restricted Pod Security fields
// asserted, the RBAC kept to the runner's namespace, and the whole directory applied with
// `kubectl apply --validate=false` to the test API server of @everdict/placement-kubernetes.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestApiServer, type TestApiServer } from '@everdict/placement-kubernetes/testing';
import {
  loadAllYaml,
  type V1Deployment,
  type V1Namespace,
  type V1NetworkPolicy,
  type V1Role,
  type V1RoleBinding,
  type V1Secret,
  type V1ServiceAccount,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const DIR = fileURLToPath(new URL('../../../deploy/kubernetes/', import.meta.url));
const NS = 'everdict-runner';

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

describe('deploy/kubernetes', () => {
  it('has exactly the runner objects, all in its namespace', () => {
    expect(objects.map((o) => o.kind).sort()).toEqual(
      ['Deployment', 'Namespace', 'NetworkPolicy', 'Role', 'RoleBinding', 'Secret', 'ServiceAccount'].sort(),
    );
    for (const o of objects) if (o.kind !== 'Namespace') expect(o.metadata.namespace, o.kind).toBe(NS);
    const ns = one<V1Namespace>('Namespace');
    expect(ns.metadata?.labels?.['pod-security.kubernetes.io/enforce']).toBe('restricted');
    expect(one<V1ServiceAccount>('ServiceAccount').metadata?.name).toBe('everdict-runner');
    expect(one<V1Secret>('Secret').stringData).toHaveProperty('runner.json');
  });

  it('the Deployment meets the restricted Pod Security profile', () => {
    const d = one<V1Deployment>('Deployment');
    const pod = d.spec!.template.spec!;
    expect(pod.serviceAccountName).toBe('everdict-runner');
    expect(pod.hostNetwork ?? false).toBe(false);
    expect(pod.hostPID ?? false).toBe(false);
    expect(pod.hostIPC ?? false).toBe(false);
    expect(pod.securityContext?.runAsNonRoot).toBe(true);
    expect(pod.securityContext?.runAsUser).toBeGreaterThan(0);
    expect(pod.securityContext?.seccompProfile?.type).toBe('RuntimeDefault');
    for (const c of [...pod.containers, ...(pod.initContainers ?? [])]) {
      const sc = c.securityContext!;
      expect(sc.allowPrivilegeEscalation, c.name).toBe(false);
      expect(sc.privileged ?? false).toBe(false);
      expect(sc.capabilities?.drop).toEqual(['ALL']);
      expect(sc.capabilities?.add ?? []).toEqual([]);
      expect(sc.readOnlyRootFilesystem).toBe(true);
      expect(sc.runAsNonRoot).toBe(true);
      expect(sc.seccompProfile?.type).toBe('RuntimeDefault');
      expect(c.args?.slice(0, 3)).toEqual(['start', '--driver', 'kubernetes']);
    }
    for (const v of pod.volumes ?? []) expect(v.hostPath, v.name).toBeUndefined();
    const secretVolume = pod.volumes?.find((v) => v.secret);
    expect(secretVolume?.secret?.secretName).toBe('everdict-runner-credential');
  });

  it('the Role reaches pods, their logs and exec in its namespace — and the driver’s lease, policy, quotas', () => {
    const role = one<V1Role>('Role');
    const granted = role.rules!.flatMap((r) =>
      r.resources!.map((res) => `${r.apiGroups![0] || 'core'}/${res}`),
    );
    expect(granted.sort()).toEqual(
      [
        'core/pods',
        'core/pods/log',
        'core/pods/exec',
        'coordination.k8s.io/leases',
        'networking.k8s.io/networkpolicies',
        'core/resourcequotas',
      ].sort(),
    );
    for (const r of role.rules!) expect(r.verbs).not.toContain('*');
    const binding = one<V1RoleBinding>('RoleBinding');
    expect(binding.roleRef).toMatchObject({ kind: 'Role', name: 'everdict-runner' });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'everdict-runner', namespace: NS }]);
  });

  it('the NetworkPolicy admits nothing in and lets the runner reach out only on its listed paths', () => {
    const np = one<V1NetworkPolicy>('NetworkPolicy');
    expect(np.spec?.policyTypes?.sort()).toEqual(['Egress', 'Ingress']);
    expect(np.spec?.ingress).toEqual([]);
    expect(np.spec?.podSelector?.matchLabels).toEqual({ 'app.kubernetes.io/component': 'runner' });
    const d = one<V1Deployment>('Deployment');
    expect(d.spec!.template.metadata!.labels).toMatchObject(np.spec!.podSelector!.matchLabels!);
    const targets = np.spec!.egress!.map((e) => e.to?.[0]?.ipBlock?.cidr ?? 'dns');
    expect(targets).toHaveLength(3);
    for (const e of np.spec!.egress!) expect(e.ports?.length).toBeGreaterThan(0);
  });

  describe('applied with kubectl to the test API server', () => {
    let server: TestApiServer;
    let dir: string;
    beforeAll(async () => {
      server = await startTestApiServer();
      dir = mkdtempSync(join(tmpdir(), 'runner-kubectl-'));
    });
    afterAll(async () => {
      await server?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('kubectl apply --validate=false -f deploy/kubernetes/ creates every object', async () => {
      const result = await server.kubectlApply(dir, NS, DIR);
      expect(result.code, result.out).toBe(0);
      for (const o of objects) {
        const plural = `${o.kind.toLowerCase().replace(/y$/, 'ie')}s`;
        const stored = server.getObject(o.apiVersion, plural, o.metadata.namespace, o.metadata.name);
        expect(stored, `${o.kind}/${o.metadata.name}`).toBeDefined();
      }
      const deployment = server.getObject(
        'apps/v1',
        'deployments',
        NS,
        'everdict-runner',
      ) as unknown as V1Deployment;
      expect(deployment.spec?.template.spec?.securityContext?.runAsNonRoot).toBe(true);
    });
  });
});
