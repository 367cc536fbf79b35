// The control plane's one TrajectoryStore: a directory under EVERDICT_DATA_DIR by default
// (`<dataDir>/trajectories`), S3-compatible storage when EVERDICT_S3_BUCKET is set.
import { backendFromEnv, type StoreEnv, TrajectoryStore } from '@everdict/trajectory-store';

export interface OpenTrajectoryStoreOptions {
  /** The process environment's storage variables (EVERDICT_S3_BUCKET, _ENDPOINT, _REGION, EVERDICT_DATA_DIR). */
  readonly env?: StoreEnv;
  /** The data directory (config.dataDir); the local backend lives in `<dataDir>/trajectories`. */
  readonly dataDir?: string;
  /** The clock the store stamps seals and deletions with (the core's clock). */
  readonly now?: () => Date;
  /** How often a tail re-checks storage for another replica's appends (default 1000 ms). */
  readonly tailPollMs?: number;
}

export function openTrajectoryStore(options: OpenTrajectoryStoreOptions = {}): TrajectoryStore {
  const backend = backendFromEnv(options.env ?? {}, options.dataDir ? { dataDir: options.dataDir } : {});
  return new TrajectoryStore({
    backend,
    ...(options.now ? { now: options.now } : {}),
    ...(options.tailPollMs ? { tailPollMs: options.tailPollMs } : {}),
  });
}
