// What a network plugin would enforce of NetworkPolicies, reduced to the one question the runners can act
// on: does some policy select this pod and allow it no egress at all?
import type { ObjectStore } from '../object-store.js';
import { findType, type ResourceType } from '../resources.js';
import type { KubeObject } from '../selectors.js';

const NETWORK_POLICIES = findType('networking.k8s.io', 'v1', 'networkpolicies') as ResourceType;

type Expression = { key: string; operator: string; values?: string[] };
type Selector = { matchLabels?: Record<string, string>; matchExpressions?: Expression[] };

export function selects(selector: Selector | undefined, labels: Record<string, string>): boolean {
  if (!selector) return true;
  for (const [key, value] of Object.entries(selector.matchLabels ?? {}))
    if (labels[key] !== value) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const value = labels[e.key] ?? '';
    const ok =
      e.operator === 'In'
        ? has && (e.values ?? []).includes(value)
        : e.operator === 'NotIn'
          ? !has || !(e.values ?? []).includes(value)
          : e.operator === 'Exists'
            ? has
            : e.operator === 'DoesNotExist'
              ? !has
              : false;
    if (!ok) return false;
  }
  return true;
}

export function deniesEgress(policy: KubeObject, labels: Record<string, string>): boolean {
  const spec = (policy.spec ?? {}) as { podSelector?: Selector; policyTypes?: string[]; egress?: unknown[] };
  const types = spec.policyTypes ?? (spec.egress ? ['Ingress', 'Egress'] : ['Ingress']);
  return types.includes('Egress') && (spec.egress ?? []).length === 0 && selects(spec.podSelector, labels);
}

/** `none` when a NetworkPolicy of the pod's namespace selects it and allows it no egress. */
export function podNetwork(store: ObjectStore, pod: KubeObject): 'none' | 'granted' {
  const policies = store.list(NETWORK_POLICIES, pod.metadata.namespace, () => true);
  return policies.some((p) => deniesEgress(p, pod.metadata.labels ?? {})) ? 'none' : 'granted';
}
