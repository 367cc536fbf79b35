// Pod labels and annotations of a sandbox. Label values are limited to 63 characters of
// [A-Za-z0-9-_.]; a tenant or run id that does not fit is labelled by a BLAKE3 prefix of itself, and the
// exact labels ride in an annotation.
import { blake3Hex, type LabelSelector, Labels } from '@everdict/placement';

export const MANAGED_BY_KEY = 'app.kubernetes.io/managed-by';
export const MANAGED_BY_VALUE = 'everdict';
export const TENANT_KEY = 'everdict.dev/tenant';
export const RUN_KEY = 'everdict.dev/run';
export const KIND_KEY = 'everdict.dev/kind';
export const NETWORK_KEY = 'everdict.dev/network';
export const OWNER_KEY = 'everdict.dev/owner';
export const LABELS_ANNOTATION = 'everdict.dev/labels';
export const SANDBOX_ANNOTATION = 'everdict.dev/sandbox';

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const utf8 = new TextEncoder();

export function labelValue(value: string): string {
  return value.length <= 63 && LABEL_VALUE.test(value)
    ? value
    : `b3-${blake3Hex(utf8.encode(value)).slice(0, 40)}`;
}

export function podLabels(labels: Labels, network: string, owner: string): Record<string, string> {
  return {
    [MANAGED_BY_KEY]: MANAGED_BY_VALUE,
    [TENANT_KEY]: labelValue(labels.tenant),
    [RUN_KEY]: labelValue(labels.runId),
    [KIND_KEY]: labelValue(labels.kind),
    [NETWORK_KEY]: network,
    [OWNER_KEY]: labelValue(owner),
  };
}

/** A Kubernetes label selector for everdict pods matching the given labels. */
export function selectorFor(selector: LabelSelector): string {
  const parts = [`${MANAGED_BY_KEY}=${MANAGED_BY_VALUE}`];
  if (selector.tenant !== undefined) parts.push(`${TENANT_KEY}=${labelValue(selector.tenant)}`);
  if (selector.runId !== undefined) parts.push(`${RUN_KEY}=${labelValue(selector.runId)}`);
  if (selector.kind !== undefined) parts.push(`${KIND_KEY}=${labelValue(selector.kind)}`);
  return parts.join(',');
}

/** The exact labels a pod was provisioned with (from its annotation), or undefined if unreadable. */
export function labelsOf(annotations: Record<string, string> | undefined): Labels | undefined {
  try {
    return Labels.parse(JSON.parse(annotations?.[LABELS_ANNOTATION] ?? ''));
  } catch {
    return undefined;
  }
}
