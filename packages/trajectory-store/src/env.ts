// The backend an app gets from its environment: S3 when EVERDICT_S3_BUCKET is set, else a directory
// under EVERDICT_DATA_DIR (the embedded default).
import path from 'node:path';
import type { ObjectBackend } from './backend.js';
import { localBackend } from './local/local-backend.js';
import { s3Backend } from './s3/s3-lazy.js';

export interface StoreEnv {
  readonly EVERDICT_DATA_DIR?: string;
  readonly EVERDICT_S3_BUCKET?: string;
  readonly EVERDICT_S3_ENDPOINT?: string;
  readonly EVERDICT_S3_REGION?: string;
}

export function backendFromEnv(env: StoreEnv, options: { dataDir?: string } = {}): ObjectBackend {
  const bucket = env.EVERDICT_S3_BUCKET?.trim();
  if (bucket) {
    const endpoint = env.EVERDICT_S3_ENDPOINT?.trim();
    const region = env.EVERDICT_S3_REGION?.trim();
    return s3Backend({ bucket, ...(endpoint ? { endpoint } : {}), ...(region ? { region } : {}) });
  }
  const dataDir = options.dataDir ?? env.EVERDICT_DATA_DIR ?? '.everdict';
  return localBackend({ root: path.join(dataDir, 'trajectories') });
}
