// Where an image park's workspace snapshot is kept: the object store (the trajectory store's backend —
// a directory under the data dir, or the S3 bucket), content-addressed per tenant. The address is BLAKE3 of
// the deterministic tar (`@everdict/placement`); a restore checks the bytes against it.
import type { ObjectBackend } from '@everdict/trajectory-store';

export interface SnapshotStore {
  /** Stores the tar; returns the object path to name in the park. */
  put(tenant: string, address: string, bytes: Uint8Array): Promise<string>;
  get(tenant: string, path: string): Promise<Uint8Array | null>;
  delete(tenant: string, path: string): Promise<void>;
}

export function objectSnapshots(backend: ObjectBackend): SnapshotStore {
  return {
    async put(tenant, address, bytes) {
      const path = `sessions/snapshots/${address}.tar`;
      await backend.put({ tenant, path }, bytes);
      return path;
    },
    get: (tenant, path) => backend.get({ tenant, path }),
    delete: (tenant, path) => backend.delete({ tenant, path }),
  };
}
