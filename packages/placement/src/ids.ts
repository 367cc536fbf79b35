// Sandbox ids: stable per (tenant, run id) on a driver, so provisioning is idempotent across restarts,
// and short and DNS-safe (a Kubernetes pod name is ≤ 63 characters of [a-z0-9-]).
import { blake3Hex } from './address.js';
import type { Labels } from './spec.js';

const utf8 = new TextEncoder();

/** `<prefix>-<24 hex of BLAKE3(tenant NUL runId)>`; prefix is lower-case [a-z0-9-], ≤ 38 characters. */
export function sandboxId(prefix: string, labels: Pick<Labels, 'tenant' | 'runId'>): string {
  return `${prefix}-${blake3Hex(utf8.encode(`${labels.tenant}\0${labels.runId}`)).slice(0, 24)}`;
}

export function matchesLabels(labels: Labels, selector: Partial<Labels>): boolean {
  return (
    (selector.tenant === undefined || selector.tenant === labels.tenant) &&
    (selector.runId === undefined || selector.runId === labels.runId) &&
    (selector.kind === undefined || selector.kind === labels.kind)
  );
}
