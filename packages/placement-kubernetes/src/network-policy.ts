// `network: "none"` on Kubernetes: a NetworkPolicy that selects sandbox pods labelled
// everdict.dev/network=none and allows them no ingress and no egress (the cluster's network plugin enforces
// it). Created on demand, once per namespace; an existing one is kept.
import { PlacementError } from '@everdict/placement';
import type { NetworkingV1Api } from '@kubernetes/client-node';
import { NETWORK_KEY } from './labels.js';

export const NETWORK_POLICY = 'everdict-sandbox-no-network';
const ensured = new WeakMap<NetworkingV1Api, Set<string>>();

export async function ensureNetworkPolicy(api: NetworkingV1Api, namespace: string): Promise<void> {
  const done = ensured.get(api) ?? new Set<string>();
  ensured.set(api, done);
  if (done.has(namespace)) return;
  try {
    await api.createNamespacedNetworkPolicy({
      namespace,
      body: {
        metadata: { name: NETWORK_POLICY, namespace, labels: { 'app.kubernetes.io/managed-by': 'everdict' } },
        spec: { podSelector: { matchLabels: { [NETWORK_KEY]: 'none' } }, policyTypes: ['Ingress', 'Egress'] },
      },
    });
  } catch (error) {
    if ((error as { code?: number }).code !== 409) {
      throw new PlacementError(
        'spawn_failed',
        `network isolation could not be set up in ${namespace}: ${(error as Error).message}`,
        { namespace },
      );
    }
  }
  done.add(namespace);
}
