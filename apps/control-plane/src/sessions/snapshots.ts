// Where an image park's workspace snapshot is kept: the object store (the trajectory store's backend —
// a directory under the data dir, or the S3 bucket), per tenant. The address is BLAKE3 of the deterministic
// tar (`@everdict/placement`); a restore checks the bytes against it. Each park gets its OWN object (under its
// run, with a fresh nonce): two parks of identical workspaces (two fresh sandboxes of one image, or one
// session parked again with the same files) share an address, and one park's resume or close deletes its
// object — which must never be another park's. A store that does not answer is 503 `storage_unavailable`
// (`reason: snapshot_unavailable`), never a 500.
import { randomBytes } from 'node:crypto';
import type { ObjectBackend } from '@everdict/trajectory-store';
import { ControlPlaneError, isControlPlaneError } from '../errors.js';
import { fromStoreError } from '../trajectory/errors.js';

export interface SnapshotStore {
  /** Stores the tar of the park of `runId`; returns the object path to name in the park (unique to it). */
  put(tenant: string, runId: string, address: string, bytes: Uint8Array): Promise<string>;
  get(tenant: string, path: string): Promise<Uint8Array | null>;
  delete(tenant: string, path: string): Promise<void>;
}

/** A store failure as the control plane's typed 503 (a refusal of ours, e.g. a bad request, kept as is). */
export function snapshotStoreError(e: unknown, what: string): ControlPlaneError {
  const mapped = fromStoreError(e);
  if (isControlPlaneError(mapped) && mapped.code !== 'storage_unavailable') return mapped;
  const message = mapped instanceof Error ? mapped.message : String(mapped);
  return new ControlPlaneError(
    'storage_unavailable',
    `the park's snapshot could not be ${what}: ${message}`,
    {
      reason: 'snapshot_unavailable',
    },
  );
}

export function objectSnapshots(backend: ObjectBackend): SnapshotStore {
  return {
    async put(tenant, runId, address, bytes) {
      const path = `sessions/snapshots/${runId}/${address}.${randomBytes(8).toString('hex')}.tar`;
      await backend.put({ tenant, path }, bytes).catch((e: unknown) => {
        throw snapshotStoreError(e, 'stored');
      });
      return path;
    },
    get: (tenant, path) =>
      backend.get({ tenant, path }).catch((e: unknown) => {
        throw snapshotStoreError(e, 'read');
      }),
    delete: (tenant, path) => backend.delete({ tenant, path }),
  };
}
