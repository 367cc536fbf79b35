// The kinds this server knows: what discovery lists and what the object store accepts. Pods are run (see
// pods/); resource quotas are enforced and counted (quota.ts); every other kind is kept as written.

export interface ResourceType {
  group: string; // '' for the core group
  version: string;
  resource: string; // plural, the URL segment
  singular: string;
  kind: string;
  namespaced: boolean;
  shortNames?: string[];
  subresources?: string[];
  categories?: string[];
}

const CRUD = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

function type(
  group: string,
  version: string,
  resource: string,
  kind: string,
  namespaced: boolean,
  extra: Partial<ResourceType> = {},
): ResourceType {
  return { group, version, resource, singular: kind.toLowerCase(), kind, namespaced, ...extra };
}

export const RESOURCE_TYPES: readonly ResourceType[] = [
  type('', 'v1', 'pods', 'Pod', true, {
    shortNames: ['po'],
    subresources: ['exec', 'log', 'status'],
    categories: ['all'],
  }),
  type('', 'v1', 'namespaces', 'Namespace', false, { shortNames: ['ns'], subresources: ['status'] }),
  type('', 'v1', 'resourcequotas', 'ResourceQuota', true, {
    shortNames: ['quota'],
    subresources: ['status'],
  }),
  type('', 'v1', 'serviceaccounts', 'ServiceAccount', true, { shortNames: ['sa'] }),
  type('', 'v1', 'secrets', 'Secret', true),
  type('', 'v1', 'configmaps', 'ConfigMap', true, { shortNames: ['cm'] }),
  type('', 'v1', 'services', 'Service', true, { shortNames: ['svc'], categories: ['all'] }),
  type('', 'v1', 'persistentvolumeclaims', 'PersistentVolumeClaim', true, { shortNames: ['pvc'] }),
  type('apps', 'v1', 'deployments', 'Deployment', true, { shortNames: ['deploy'], categories: ['all'] }),
  type('apps', 'v1', 'statefulsets', 'StatefulSet', true, { shortNames: ['sts'], categories: ['all'] }),
  type('apps', 'v1', 'daemonsets', 'DaemonSet', true, { shortNames: ['ds'], categories: ['all'] }),
  type('apps', 'v1', 'replicasets', 'ReplicaSet', true, { shortNames: ['rs'], categories: ['all'] }),
  type('batch', 'v1', 'jobs', 'Job', true, { categories: ['all'] }),
  type('batch', 'v1', 'cronjobs', 'CronJob', true, { shortNames: ['cj'], categories: ['all'] }),
  type('rbac.authorization.k8s.io', 'v1', 'roles', 'Role', true),
  type('rbac.authorization.k8s.io', 'v1', 'rolebindings', 'RoleBinding', true),
  type('rbac.authorization.k8s.io', 'v1', 'clusterroles', 'ClusterRole', false),
  type('rbac.authorization.k8s.io', 'v1', 'clusterrolebindings', 'ClusterRoleBinding', false),
  type('networking.k8s.io', 'v1', 'networkpolicies', 'NetworkPolicy', true, { shortNames: ['netpol'] }),
  type('networking.k8s.io', 'v1', 'ingresses', 'Ingress', true, { shortNames: ['ing'] }),
  type('policy', 'v1', 'poddisruptionbudgets', 'PodDisruptionBudget', true, { shortNames: ['pdb'] }),
  type('coordination.k8s.io', 'v1', 'leases', 'Lease', true),
];

/** `v1` or `apps/v1`. */
export function groupVersion(t: Pick<ResourceType, 'group' | 'version'>): string {
  return t.group ? `${t.group}/${t.version}` : t.version;
}

export function findType(group: string, version: string, resource: string): ResourceType | undefined {
  return RESOURCE_TYPES.find((t) => t.group === group && t.version === version && t.resource === resource);
}

export function typeOfKind(apiVersion: string, kind: string): ResourceType | undefined {
  return RESOURCE_TYPES.find((t) => groupVersion(t) === apiVersion && t.kind === kind);
}

/** Discovery: the groups (in a stable order, core excluded) and each group-version's resource list. */
export function apiGroups(): { name: string; version: string }[] {
  const seen = new Map<string, string>();
  for (const t of RESOURCE_TYPES) if (t.group && !seen.has(t.group)) seen.set(t.group, t.version);
  return [...seen].map(([name, version]) => ({ name, version }));
}

export function apiResourceList(group: string, version: string): Record<string, unknown> | undefined {
  const types = RESOURCE_TYPES.filter((t) => t.group === group && t.version === version);
  if (types.length === 0) return undefined;
  const resources: Record<string, unknown>[] = [];
  for (const t of types) {
    resources.push({
      name: t.resource,
      singularName: t.singular,
      namespaced: t.namespaced,
      kind: t.kind,
      verbs: CRUD,
      ...(t.shortNames ? { shortNames: t.shortNames } : {}),
      ...(t.categories ? { categories: t.categories } : {}),
    });
    for (const sub of t.subresources ?? []) {
      const verbs = sub === 'exec' ? ['create', 'get'] : sub === 'log' ? ['get'] : ['get', 'patch', 'update'];
      const kind = sub === 'exec' ? 'PodExecOptions' : t.kind;
      resources.push({
        name: `${t.resource}/${sub}`,
        singularName: '',
        namespaced: t.namespaced,
        kind,
        verbs,
      });
    }
  }
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: groupVersion({ group, version }),
    resources,
  };
}
