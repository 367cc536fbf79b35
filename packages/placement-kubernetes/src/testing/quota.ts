// ResourceQuota, as the apiserver's quota admission and the quota controller do it: a create that would
// pass `spec.hard` is refused 403 "exceeded quota", a CPU or memory quota demands the pod state its
// requests or limits (an ephemeral-storage quota does not: a container stating none counts 0), and
// `status.used` counts the namespace's pods that are not in a terminal phase.
import { formatResource, parseResource } from '../quantity.js';
import type { ObjectStore } from './object-store.js';
import type { PodSpec } from './pods/pod-spec.js';
import { findType, RESOURCE_TYPES, type ResourceType } from './resources.js';
import type { KubeObject } from './selectors.js';
import { errors } from './status.js';

const QUOTAS = findType('', 'v1', 'resourcequotas') as ResourceType;
const PODS = findType('', 'v1', 'pods') as ResourceType;
/** Compute resources every container must state once a quota names them (the apiserver's validation set). */
const COMPUTE = ['requests.cpu', 'requests.memory', 'limits.cpu', 'limits.memory', 'cpu', 'memory'];
/** Counted from the containers like memory, but not demanded of them. */
const STORAGE = ['requests.ephemeral-storage', 'limits.ephemeral-storage', 'ephemeral-storage'];

const isTerminal = (pod: KubeObject) => {
  const phase = (pod.status as { phase?: string } | undefined)?.phase;
  return phase === 'Succeeded' || phase === 'Failed';
};

/** What one pod uses of a quota resource, or undefined when some container does not state it. */
function podAmount(pod: KubeObject, resource: string): bigint | undefined {
  if (resource === 'pods' || resource === 'count/pods') return 1n;
  const required = COMPUTE.includes(resource);
  if (!required && !STORAGE.includes(resource)) return 0n;
  const [section, name] = resource.includes('.')
    ? (resource.split('.') as [string, string])
    : ['requests', resource];
  let total = 0n;
  for (const c of (pod.spec as PodSpec).containers) {
    const text = c.resources?.[section as 'requests' | 'limits']?.[name];
    if (text === undefined) {
      if (required) return undefined;
      continue;
    }
    total += parseResource(name, text) ?? 0n;
  }
  return total;
}

/** The type a `count/<resource>[.<group>]` or bare core name (`secrets`) counts, if any. */
function countedType(resource: string): ResourceType | undefined {
  const plural = resource.startsWith('count/') ? resource.slice('count/'.length) : resource;
  const dot = plural.indexOf('.');
  const [name, group] = dot === -1 ? [plural, ''] : [plural.slice(0, dot), plural.slice(dot + 1)];
  if (name === 'pods' && group === '') return undefined;
  return RESOURCE_TYPES.find((t) => t.resource === name && t.group === group && t.namespaced);
}

function usedIn(store: ObjectStore, namespace: string, resource: string): bigint {
  const counted = countedType(resource);
  if (counted) return BigInt(store.list(counted, namespace, () => true).length);
  let used = 0n;
  for (const pod of store.list(PODS, namespace, () => true)) {
    if (!isTerminal(pod)) used += podAmount(pod, resource) ?? 0n;
  }
  return used;
}

function hardOf(quota: KubeObject): Record<string, string> {
  return ((quota.spec as { hard?: Record<string, string> } | undefined)?.hard ?? {}) as Record<
    string,
    string
  >;
}

/** Refuse a create the namespace's quotas do not admit (403), as quota admission does. */
export function admitByQuota(store: ObjectStore, type: ResourceType, object: KubeObject): void {
  const namespace = object.metadata.namespace ?? 'default';
  const target = { group: type.group, resource: type.resource, name: object.metadata.name };
  for (const quota of store.list(QUOTAS, namespace, () => true)) {
    const hard = hardOf(quota);
    const missing: string[] = [];
    const requested: string[] = [];
    const used: string[] = [];
    const limited: string[] = [];
    for (const [resource, text] of Object.entries(hard).sort(([a], [b]) => a.localeCompare(b))) {
      let amount: bigint | undefined;
      if (type.resource === 'pods') amount = podAmount(object, resource);
      else amount = countedType(resource) === type ? 1n : 0n;
      if (amount === undefined) {
        const names = (object.spec as PodSpec).containers.map((c) => c.name).join(',');
        missing.push(`${resource} for: ${names}`);
        continue;
      }
      if (amount === 0n) continue;
      const limit = parseResource(resource, text) ?? 0n;
      const current = usedIn(store, namespace, resource);
      if (current + amount > limit) {
        requested.push(`${resource}=${formatResource(resource, amount)}`);
        used.push(`${resource}=${formatResource(resource, current)}`);
        limited.push(`${resource}=${text}`);
      }
    }
    if (missing.length) {
      throw errors.forbidden(
        target,
        `failed quota: ${quota.metadata.name}: must specify ${missing.join('; ')}`,
      );
    }
    if (requested.length) {
      throw errors.forbidden(
        target,
        `exceeded quota: ${quota.metadata.name}, requested: ${requested.join(',')}, used: ${used.join(',')}, limited: ${limited.join(',')}`,
      );
    }
  }
}

/** Bring every quota's `status` of a namespace up to date (the quota controller's job). */
export function refreshQuotaStatus(store: ObjectStore, namespace: string): void {
  for (const quota of store.list(QUOTAS, namespace, () => true)) {
    const hard = hardOf(quota);
    const used: Record<string, string> = {};
    for (const resource of Object.keys(hard))
      used[resource] = formatResource(resource, usedIn(store, namespace, resource));
    const status = { hard, used };
    if (JSON.stringify(quota.status) === JSON.stringify(status)) continue;
    store.update(QUOTAS, { ...quota, status });
  }
}
