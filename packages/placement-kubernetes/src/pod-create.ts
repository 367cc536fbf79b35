// Creating a sandbox pod, and what a create that got no clear answer leaves behind. A create whose request
// reached the apiserver may have made the pod although the client saw a timeout, a cut connection or a 5xx
// (a 504 from the apiserver says as much: "may still be processing the request"). The pod's name is
// deterministic (`sandboxId` of tenant + run id) and it carries this instance's owner label, so the driver
// deletes it by name at once; if that delete fails too (or the create lands after it), the pod is an
// orphan of this instance — neither held nor being provisioned — and the next `reap` removes it.
import { PlacementError } from '@everdict/placement';
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { labelValue, OWNER_KEY } from './labels.js';

const statusCode = (error: unknown) => (error as { code?: number }).code;
const bodyOf = (error: unknown) => String((error as { body?: unknown }).body ?? error);

/**
 * No HTTP status (a timeout, a cut connection: fetch errors carry a string `code` such as `ECONNRESET`, or
 * none), or a 5xx: the apiserver may have carried the create out. A 4xx is a refusal: nothing was made.
 */
export function isUncertain(error: unknown): boolean {
  const code: unknown = statusCode(error);
  return typeof code !== 'number' || code >= 500;
}

/** Names with an operation under way (counted: two provisions of one sandbox may overlap). */
export class InFlight {
  private readonly count = new Map<string, number>();

  has(name: string): boolean {
    return this.count.has(name);
  }

  async during<T>(name: string, work: () => Promise<T>): Promise<T> {
    this.count.set(name, (this.count.get(name) ?? 0) + 1);
    try {
      return await work();
    } finally {
      const left = (this.count.get(name) ?? 1) - 1;
      if (left > 0) this.count.set(name, left);
      else this.count.delete(name);
    }
  }
}

/**
 * Pods (by uid) this instance deleted after a create that got no answer. Until the watch has caught up it
 * may still show them (their ADDED before their DELETED): provision must neither adopt nor wait on them.
 */
export class AbandonedPods {
  private readonly uids = new Set<string>();

  add(uid: string | undefined): void {
    if (uid === undefined) return;
    this.uids.add(uid);
    if (this.uids.size > 1024) this.uids.delete(this.uids.values().next().value as string);
  }

  has(pod: V1Pod | undefined): boolean {
    const uid = pod?.metadata?.uid;
    return uid !== undefined && this.uids.has(uid);
  }
}

/**
 * Create the pod: its uid, or `exists` when the name is taken (409: provision adopts it); a refusal as a
 * PlacementError; a create with no clear answer deletes the pod it may have made before it fails.
 */
export async function createPod(
  core: CoreV1Api,
  body: V1Pod,
  owner: string,
  cached: () => V1Pod | undefined,
  abandoned: AbandonedPods,
): Promise<{ uid: string | undefined } | 'exists'> {
  const namespace = body.metadata?.namespace ?? '';
  const name = body.metadata?.name ?? '';
  try {
    const created = await core.createNamespacedPod({ namespace, body });
    return { uid: created.metadata?.uid };
  } catch (error) {
    if (statusCode(error) === 409) return 'exists';
    if (statusCode(error) === 403 && /exceeded quota/.test(bodyOf(error))) {
      throw new PlacementError('capacity', 'the namespace quota admits no more sandbox pods', { namespace });
    }
    if (!isUncertain(error)) {
      throw new PlacementError('spawn_failed', `the pod could not be created: ${bodyOf(error)}`, {
        namespace,
      });
    }
    const cleanup = await removeUncertain(core, namespace, name, owner, cached(), abandoned);
    throw new PlacementError(
      'spawn_failed',
      `the pod create got no clear answer (${(error as Error).message ?? bodyOf(error)}); ${CLEANUP[cleanup]}`,
      { namespace, pod: name, uncertain: true, cleanup },
    );
  }
}

type Cleanup = 'deleted' | 'not_found' | 'left_for_reap';
const CLEANUP: Record<Cleanup, string> = {
  deleted: 'the pod it made was deleted',
  not_found: 'no pod was made (one the create makes later is left to reap)',
  left_for_reap: 'the pod it may have made could not be deleted and is left to reap',
};

/** Delete (grace 0) the pod an unanswered create may have made; a 404 means it was not made (yet). */
async function removeUncertain(
  core: CoreV1Api,
  namespace: string,
  name: string,
  owner: string,
  seen: V1Pod | undefined,
  abandoned: AbandonedPods,
): Promise<Cleanup> {
  // the watch shows a pod of that name that another instance made: not ours to delete
  if (seen && seen.metadata?.labels?.[OWNER_KEY] !== labelValue(owner)) return 'left_for_reap';
  try {
    const deleted = await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
    abandoned.add(deleted.metadata?.uid);
    return 'deleted';
  } catch (error) {
    return statusCode(error) === 404 ? 'not_found' : 'left_for_reap';
  }
}
