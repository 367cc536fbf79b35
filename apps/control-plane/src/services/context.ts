// What every service shares: the database, the clock, ids, the admission store, a logger.
import { randomFillSync } from 'node:crypto';
import type { LedgerDatabase } from '../db/database.js';
import type { QueueStats } from '../db/queue-stats.js';
import type { Db } from '../db/tx.js';
import type { ExecutorRegistry } from '../executors/registry.js';
import type { Signer } from '../keys/signer.js';
import type { Clock, CoreObserver, CoreOptions, IdGen } from './options.js';

export interface Deps {
  ldb: LedgerDatabase;
  db: Db;
  clock: Clock;
  ids: IdGen;
  log: NonNullable<CoreOptions['log']>;
  /** Admission + dispatch hooks (metrics); a no-op unless `CoreOptions.metrics` is given. */
  observe: CoreObserver;
  /** Told how many entries each create enqueued; keeps the queue's planner statistics current. */
  queueStats: QueueStats;
  /** The control plane's Ed25519 key: signs the attestations of the intervals it executes inline. */
  signer: Signer;
  /** The executors this deployment has: every create door asks it before admission (422 no_placement). */
  executors: ExecutorRegistry;
  /**
   * This process's dispatch loop, when it runs one (core.ts sets it once started): a create that committed
   * runs wakes it in-process at once, and its NOTIFY carries `token` so that loop skips its own echo (other
   * replicas and the runner service still wake on it).
   */
  localDispatch?: LocalDispatch;
  /**
   * This process's trigger loop, when it runs one (core.ts): a schedule created or enabled here is read at its
   * next tick even while the loop, alone on its database, spaces its reads out (scheduler/trigger-loop.ts).
   */
  schedulesChanged?: () => void;
}

export interface LocalDispatch {
  /** The NOTIFY payload of this process's own dispatch wakes. */
  token: string;
  wake(): void;
}

export const DISPATCH_CHANNEL = 'everdict_dispatch';
/**
 * The payload of a settle's NOTIFY on DISPATCH_CHANNEL (admission-store/sql/settle.ts): a tenant with queued
 * runs got running capacity back. Claimers claim again; it announces no cancel.
 */
export const RELEASED_PAYLOAD = 'released';

/**
 * Announced at the commit of what makes a parked agent turn ready without writing a fact (an approval answered,
 * a resume declined, a resume's lease lost): the agent hosts' turn long-polls look again
 * (agents/turn-waiters.ts). (A fact announces itself on EVENTS_CHANNEL; a create, a release and a requeue on DISPATCH_CHANNEL.)
 */
export const TURNS_CHANNEL = 'everdict_turns';

/** The kinds only the inline lane (this control plane's dispatch loop) executes: no runner ever claims them. */
export const INLINE_LANE_KINDS: ReadonlySet<string> = new Set(['analysis']);
/** Appended to a dispatch NOTIFY's payload when every run it announces is of the inline lane. */
export const INLINE_ONLY_NOTE = ';inline';

/**
 * The payload of a create's NOTIFY on DISPATCH_CHANNEL: the sender's token (its own dispatch loop skips the
 * echo), and INLINE_ONLY_NOTE when no run of `kinds` is a runner's — then the runners' lease long-polls stay
 * asleep (a wake would only run a lease transaction that cannot claim anything).
 */
export function dispatchPayload(token: string, kinds: Iterable<string>): string {
  for (const k of kinds) if (!INLINE_LANE_KINDS.has(k)) return token;
  return `${token}${INLINE_ONLY_NOTE}`;
}

/** Appended to a release wake's payload when the released tenants' queued runs are all a runner's kinds. */
export const RUNNERS_ONLY_NOTE = ';runners';

/** Whether a dispatch NOTIFY may announce work for a runner (anything but an inline-only create or release). */
export const mayWakeRunners = (payload: string): boolean => !payload.endsWith(INLINE_ONLY_NOTE);

/** Whether a dispatch NOTIFY may announce work for the inline lane (anything but a runners-only release). */
export const mayWakeInline = (payload: string): boolean => !payload.endsWith(RUNNERS_ONLY_NOTE);

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/** 16 fresh CSPRNG bytes, cut from a pool refilled 4 KiB at a time (one call to the CSPRNG per 256 ids). */
const POOL = new Uint8Array(4096);
let poolAt = POOL.length;
function randomBytes16(): Uint8Array {
  if (poolAt + 16 > POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  const out = POOL.subarray(poolAt, poolAt + 16);
  poolAt += 16;
  return out;
}
/** `prefix_<10 chars of ms time><16 random chars>`: sortable by creation, unique across replicas. */
export function defaultIds(clock: Clock = () => new Date()): IdGen {
  return (prefix) => {
    let t = clock().getTime();
    let time = '';
    for (let i = 0; i < 10; i++) {
      time = ALPHABET[t % 32]! + time;
      t = Math.floor(t / 32);
    }
    let rnd = '';
    const bytes = randomBytes16();
    for (let i = 0; i < 16; i++) rnd += ALPHABET[bytes[i]! % 32];
    return `${prefix}_${time}${rnd}`;
  };
}

export const nowIso = (deps: Pick<Deps, 'clock'>): string => deps.clock().toISOString();
