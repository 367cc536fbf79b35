// The public shapes of the trajectory store's options and answers.
import type { TrajectoryRef } from '@everdict/run-model';
import type { ObjectBackend } from './backend.js';
import type { Page } from './read.js';
import type { DeletionRecord, Provenance, SealRecord } from './records.js';

export interface TrajectoryStoreOptions {
  readonly backend: ObjectBackend;
  /** The clock (seal and deletion times); defaults to the system clock. */
  readonly now?: () => Date;
  /** Events per append call (default 10,000). */
  readonly maxBatchEvents?: number;
  /** Uncompressed canonical bytes per append call (default 8 MiB). */
  readonly maxBatchBytes?: number;
  /** How often a tail re-checks storage for appends made by another process (default 1000 ms). */
  readonly tailPollMs?: number;
  /** Trajectories whose state is kept in memory (default 10,000; evicted ones reload from storage). */
  readonly cacheSize?: number;
}

export interface TrajectoryPage extends Page {
  /** Events stored so far (the total once sealed). */
  readonly eventCount: number;
  readonly sealed: boolean;
}

export interface TrajectoryHead {
  readonly trajectoryId: string;
  readonly status: 'live' | 'sealed' | 'deleted';
  readonly eventCount: number;
  readonly lastSeq: number;
  readonly seal?: SealRecord;
  readonly deletion?: DeletionRecord;
  readonly provenance?: Provenance;
}

export interface Sealed {
  /** What the caller stores on the run (`run.trajectory`). */
  readonly ref: TrajectoryRef;
  readonly seal: SealRecord;
}

export interface TailItem {
  readonly offset: number;
  readonly event: Page['items'][number];
}
