// Deleting a sandbox pod: with grace, then — if the pod is still there after `forceDeleteAfterMs` (a node
// that does not act on the graceful delete) — with grace 0. A 404 is a pod already gone.
import type { CoreV1Api } from '@kubernetes/client-node';
import { code } from './api-clients.js';
import type { PodWatch } from './pod-watch.js';

export interface DeleteTimes {
  forceDeleteAfterMs: number;
  startTimeoutMs: number;
}

export async function deletePod(
  core: CoreV1Api,
  pods: PodWatch,
  name: string,
  graceSeconds: number,
  times: DeleteTimes,
): Promise<'graceful' | 'forced'> {
  const namespace = pods.namespace;
  const remove = async (grace: number) => {
    try {
      await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: grace });
    } catch (error) {
      if (code(error) !== 404) throw error;
    }
  };
  await remove(graceSeconds);
  try {
    await pods.waitFor(
      name,
      (p) => p === undefined,
      graceSeconds === 0 ? times.startTimeoutMs : times.forceDeleteAfterMs,
    );
    return 'graceful';
  } catch {
    await remove(0);
    await pods.waitFor(name, (p) => p === undefined, times.startTimeoutMs);
    return 'forced';
  }
}
