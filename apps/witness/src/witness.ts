// One poll of one log: fetch its latest STH, check it is the log's (signature under the pinned key), not
// smaller than the last accepted tree, and consistent with it (a proof from the accepted size); then
// remember it (state file, atomically) and only then cosign it and post the cosignature back.
//
// Outcomes: `accepted` (a new tree, or the same tree signed later: cosigned), `unchanged` (the same STH, or
// an older one over the same tree; the cosignature is re-posted if the log does not hold it yet),
// `rejected` (not the log's, or no well-formed proof: not accepted, not a fork), `fork` (a signed tree that
// cannot extend the accepted one: smaller, another root at one size, a consistency proof that fails, an
// empty tree whose root is not H(""), or another key — the alarm).
import {
  bytesToHex,
  type Cosignature,
  cosignTreeHead,
  isHeadLogError,
  type KeyPair,
  parseHash,
  parseTreeHeadJson,
  type SignedTreeHead,
  treeHeadToJson,
  verifyTreeHead,
  verifyTreeHeadExtends,
} from '@everdict/headlog';
import type { Logger } from 'pino';
import { LogClient } from './log-client.js';
import type { WitnessMetrics } from './metrics.js';
import {
  foldLogs,
  type LogState,
  normalizeLogUrl,
  type StateDisk,
  saveState,
  type WitnessState,
} from './state.js';

export interface LogTarget {
  readonly url: string;
  /** The log's public key (hex) when configured; else pinned on first contact (trust on first use). */
  readonly key?: string | undefined;
}

export type PollOutcome =
  | { kind: 'accepted'; treeSize: number; cosignatures?: number }
  | { kind: 'unchanged'; treeSize: number }
  | { kind: 'rejected'; code: string; detail: string }
  | { kind: 'fork'; code: string; detail: string; acceptedSize: number; offeredSize: number };

export interface WitnessOptions {
  readonly key: KeyPair;
  readonly statePath: string;
  readonly state: WitnessState;
  readonly metrics: WitnessMetrics;
  readonly logger: Logger;
  /** How the state file's directory is fsynced (default: `nodeStateDisk`); a failure is `StateUnwritable`. */
  readonly disk?: StateDisk | undefined;
}

export class Witness {
  readonly publicKey: string;
  /** Per log (normalized URL): the poll in progress, which the next poll of that log waits for. */
  private readonly polling = new Map<string, Promise<PollOutcome>>();
  constructor(private readonly o: WitnessOptions) {
    this.publicKey = bytesToHex(o.key.publicKey);
    // One entry per log, under its normalized URL (a state built by hand, not by `loadState`, too).
    const folded = foldLogs(o.state.logs, o.statePath);
    for (const k of Object.keys(o.state.logs)) delete o.state.logs[k];
    Object.assign(o.state.logs, folded);
  }

  get state(): WitnessState {
    return this.o.state;
  }

  /**
   * Writes the state with `entry` for `url`, and only then takes it as this witness's memory: a write that
   * fails (`StateUnwritable`) leaves the memory as it was, so no later poll cosigns a tree that is not on
   * disk.
   */
  private commit(url: string, entry: LogState): void {
    const next: WitnessState = { ...this.o.state, logs: { ...this.o.state.logs, [url]: entry } };
    saveState(this.o.statePath, next, this.o.disk);
    this.o.state.logs[url] = entry;
  }

  /**
   * Polls one log once. Throws `WitnessError` (`LogUnavailable`) when the log does not answer, and
   * (`StateUnwritable`) when the state file cannot be written — then nothing was accepted or cosigned. The
   * log is remembered (and named in metrics and log lines) under its normalized URL: however it is spelled,
   * one log has one pinned key and one accepted tree. Polls of one log run one at a time, in call order:
   * each starts from the tree the one before it accepted (two polls running at once could each accept a
   * different continuation of the same tree, and cosign both).
   */
  async poll(target: LogTarget): Promise<PollOutcome> {
    const url = normalizeLogUrl(target.url);
    const run = (this.polling.get(url) ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => this.pollOnce(url, target));
    this.polling.set(url, run);
    try {
      return await run;
    } finally {
      if (this.polling.get(url) === run) this.polling.delete(url);
    }
  }

  private async pollOnce(url: string, target: LogTarget): Promise<PollOutcome> {
    const { metrics, logger } = this.o;
    const client = new LogClient(url);
    const entry = this.o.state.logs[url];
    let logKey = entry?.log_key;
    if (target.key !== undefined && logKey !== undefined && target.key !== logKey) {
      return this.fork(
        url,
        'KeyChanged',
        `configured key ${target.key} is not the pinned ${logKey}`,
        entry?.accepted ? Number(entry.accepted.tree_size) : 0,
        0,
      );
    }
    if (logKey === undefined) {
      logKey = target.key ?? (await client.key()).publicKey;
      this.commit(url, { log_key: logKey, accepted: null });
      if (target.key === undefined) logger.warn({ log: url, log_key: logKey }, 'log key pinned on first use');
    }
    const keyBytes = parseHash(logKey)!;
    const accepted = entry?.accepted ? parseTreeHeadJson(entry.accepted) : null;
    const { sth: next, cosignatures } = await client.latest();

    try {
      verifyTreeHead(next, keyBytes);
    } catch (e) {
      if (!isHeadLogError(e)) throw e;
      return this.reject(url, e.code, e.detail);
    }
    const acceptedSize = accepted?.treeSize ?? 0;
    if (accepted && next.treeSize < acceptedSize) {
      return this.fork(
        url,
        'InconsistentLog',
        `a tree of ${next.treeSize} after an accepted tree of ${acceptedSize}`,
        acceptedSize,
        next.treeSize,
      );
    }
    if (accepted && next.treeSize === acceptedSize) {
      if (next.root !== accepted.root) {
        return this.fork(
          url,
          'InconsistentLog',
          `two roots for tree size ${acceptedSize}`,
          acceptedSize,
          next.treeSize,
        );
      }
      // The same tree signed again later is accepted below (a log re-signs to show it is alive); the same
      // tree signed earlier than the accepted STH is a stale one: not accepted, the memory does not go back.
      if (next.timestampMs <= accepted.timestampMs) {
        if (!cosignatures.some((c) => c.witness === this.publicKey)) await this.post(client, url, accepted);
        return { kind: 'unchanged', treeSize: acceptedSize };
      }
    }
    const proof =
      accepted && next.treeSize > acceptedSize ? await client.consistency(acceptedSize, next.treeSize) : [];
    try {
      // The first STH too: a signed empty tree whose root is not H("") is a tree that cannot exist.
      verifyTreeHeadExtends(accepted, next, proof, keyBytes);
    } catch (e) {
      if (!isHeadLogError(e)) throw e;
      if (e.code === 'InconsistentLog') return this.fork(url, e.code, e.detail, acceptedSize, next.treeSize);
      return this.reject(url, e.code, e.detail);
    }
    // Remember first, then cosign: a restarted witness never forgets a tree it vouched for.
    this.commit(url, { log_key: logKey, accepted: treeHeadToJson(next) });
    metrics.accepted.inc({ log: url });
    metrics.treeSize.set({ log: url }, next.treeSize);
    logger.info({ log: url, tree_size: next.treeSize, root: next.root }, 'tree head accepted');
    const count = await this.post(client, url, next);
    return count === undefined
      ? { kind: 'accepted', treeSize: next.treeSize }
      : { kind: 'accepted', treeSize: next.treeSize, cosignatures: count };
  }

  /** Posts this witness's cosignature; a failure is logged and retried on the next poll. */
  private async post(client: LogClient, url: string, sth: SignedTreeHead): Promise<number | undefined> {
    const c: Cosignature = cosignTreeHead(sth, this.o.key);
    try {
      return await client.postCosignature(sth, c);
    } catch (e) {
      this.o.logger.warn(
        { log: url, tree_size: sth.treeSize, err: (e as Error).message },
        'cosignature not delivered; retried next poll',
      );
      return undefined;
    }
  }

  private reject(url: string, code: string, detail: string): PollOutcome {
    this.o.metrics.rejected.inc({ log: url, code });
    this.o.logger.warn({ log: url, code, detail }, 'tree head not accepted');
    return { kind: 'rejected', code, detail };
  }

  private fork(
    url: string,
    code: string,
    detail: string,
    acceptedSize: number,
    offeredSize: number,
  ): PollOutcome {
    this.o.metrics.forks.inc({ log: url });
    this.o.logger.error(
      { log: url, code, detail, accepted_size: acceptedSize, offered_size: offeredSize, alarm: 'fork' },
      `FORK: the log at ${url} shows a tree that does not extend the one this witness accepted`,
    );
    return { kind: 'fork', code, detail, acceptedSize, offeredSize };
  }
}
