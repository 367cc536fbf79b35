// The control plane's head log (issue 18 §2): the sequencing loop (a pass every `sequenceMs`, at once again
// while a pass leaves more pending) and the reads the `/log` routes answer, every proof from stored nodes
// in one batch. The log key signs tree heads; cosignatures are kept from the configured witnesses only.
import {
  type Cosignature,
  consistencyProofObject,
  HeadLogError,
  type Hex,
  inclusionProofObject,
  type KeyPair,
  logIdOf,
  type NodeId,
  type ProofPlan,
  planConsistencyProof,
  planInclusionProof,
  planRoot,
  type SignedTreeHead,
  verifyCosignature,
} from '@everdict/headlog';
import { type FallbackPoll, NudgedLooks } from '../db/fallback-poll.js';
import type { Db, Executor } from '../db/tx.js';
import { ControlPlaneError } from '../errors.js';
import { type PassResult, Sequencer } from './sequencer.js';
import {
  addCosignature,
  anyPending,
  cosignaturesOf,
  latestTreeHead,
  leavesOf,
  readLeaf,
  readNodes,
  treeHeadAt,
  treeSize,
} from './store.js';

export interface HeadLogOptions {
  /** The log's Ed25519 key (from EVERDICT_LOG_KEY_FILE, generated on first start). */
  key: KeyPair;
  /** Witness public keys (hex) whose cosignatures are accepted (EVERDICT_WITNESS_KEYS). */
  witnessKeys?: readonly Hex[];
  /** EVERDICT_STH_INTERVAL_MS (default 2,000). */
  sthIntervalMs?: number;
  /**
   * How often the sequencer looks for pending leaves (default 250 ms: leaves are sequenced within 1 s — while alone
   * on the database, those a fact announced; an unannounced one within `fallback.aloneMs`).
   */
  sequenceMs?: number;
  /** Pending leaves per pass (default 5,000). */
  batch?: number;
  /**
   * While this says the process is alone on its database (db/fallback-poll.ts), a settled log probes at the tick
   * after a `nudge()` (the core nudges at every fact and dispatch announcement: each write of a record segment
   * writes a fact), and every `aloneMs` otherwise. Absent: every `sequenceMs`.
   */
  fallback?: Pick<FallbackPoll, 'alone' | 'aloneMs'>;
  clock?: () => number;
  log?: (level: 'debug' | 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;
}

export interface LoggedLeaf {
  leaf: Uint8Array;
  index: number;
  path: Uint8Array[];
}

/** The log's refusals, in the control plane's vocabulary. */
const notFound = (detail: string) => new ControlPlaneError('not_found', detail);

/** Reads every plan's nodes in one batch and assembles each. */
async function runPlans(ex: Executor, plans: readonly ProofPlan[]): Promise<Uint8Array[][]> {
  const all: NodeId[] = plans.flatMap((p) => [...p.nodes]);
  const hashes = await readNodes(ex, all);
  if (hashes.some((h) => h === undefined))
    throw new HeadLogError('MissingNode', 'the log does not hold the nodes this proof needs');
  let at = 0;
  return plans.map((p) => {
    const part = hashes.slice(at, at + p.nodes.length) as Uint8Array[];
    at += p.nodes.length;
    return p.assemble(part);
  });
}

export class HeadLog {
  readonly publicKey: Uint8Array;
  readonly logId: Hex;
  readonly witnessKeys: readonly Hex[];
  private readonly sequencer: Sequencer;
  private readonly sequenceMs: number;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private running: Promise<unknown> = Promise.resolve();
  /** The loop's tick in flight (its probe, then its pass): `stop()` waits for it. */
  private ticking: Promise<void> = Promise.resolve();
  /** Bumped by every start and stop: a tick of an earlier loop never schedules another. */
  private generation = 0;
  private stopped = true;
  /** Which probes of a settled log run (db/fallback-poll.ts). */
  private readonly looks: NudgedLooks;

  constructor(
    readonly db: Db,
    private readonly o: HeadLogOptions,
  ) {
    this.publicKey = o.key.publicKey;
    this.logId = logIdOf(o.key.publicKey);
    this.witnessKeys = [...new Set(o.witnessKeys ?? [])];
    this.sequenceMs = o.sequenceMs ?? 250;
    this.looks = new NudgedLooks(o.fallback, this.sequenceMs);
    this.sequencer = new Sequencer({
      key: o.key,
      sthIntervalMs: o.sthIntervalMs ?? 2_000,
      batch: o.batch ?? 5_000,
      clock: o.clock ?? Date.now,
    });
  }

  /** One sequencing pass now (tests; the loop calls it). `forceSign` signs inside the STH interval too. */
  pass(opts: { forceSign?: boolean } = {}): Promise<PassResult> {
    const p = this.running.then(() => this.sequencer.pass(this.db, opts));
    this.running = p.catch(() => undefined);
    return p;
  }

  /**
   * Something was announced that may have written a record segment (a fact, a dispatch): the next tick of a
   * settled log probes. Costs no statement.
   */
  nudge(): void {
    this.looks.nudge();
  }

  /** Probes of a settled log skipped while alone and nothing was announced (see `fallback`). */
  get skippedProbes(): number {
    return this.looks.skipped;
  }

  /** Forgets the cached frontier (the stored nodes were replaced, e.g. restored from a backup). */
  reload(): void {
    this.sequencer.forget();
  }

  /** Starts the sequencing loop (one pass at once: a first start signs the empty tree). */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    const generation = ++this.generation;
    const live = () => !this.stopped && this.generation === generation;
    // While the log is settled (nothing pending, the whole tree signed), a tick is one probe of
    // log_pending, not a sequencing transaction of six statements: an idle replica stays nearly silent.
    let settled = false;
    const tick = async () => {
      let again = false;
      try {
        // Alone on the database, a settled log probes only after an announcement, or once per `aloneMs`.
        // A stop during the probe ends the tick there: no pass begins after `stop()` was called.
        if ((!settled || (this.looks.look() && (await anyPending(this.db)))) && live()) {
          const r = await this.pass();
          again = r.more;
          settled = r.settled;
        }
      } catch (e) {
        settled = false;
        this.o.log?.('error', 'head log: sequencing pass failed', { error: String(e) });
      }
      if (live()) this.timer = setTimeout(loop, again ? 0 : this.sequenceMs);
    };
    const loop = () => {
      this.timer = null;
      this.ticking = tick();
    };
    this.timer = setTimeout(loop, 0);
  }

  /** Stops the loop and waits for its tick in flight (a probe, or a pass) and any pass in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.generation++;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.ticking;
    await this.running;
  }

  size(): Promise<number> {
    return treeSize(this.db);
  }

  /** The latest STH (`cosigned`: the latest one at least one witness cosigned, falling back to the latest). */
  async latest(opts: { cosigned?: boolean } = {}): Promise<SignedTreeHead> {
    const sth =
      (opts.cosigned ? await latestTreeHead(this.db, { cosigned: true }) : undefined) ??
      (await latestTreeHead(this.db));
    if (!sth) throw notFound('the log has signed no tree head yet');
    return sth;
  }

  async at(size: number): Promise<SignedTreeHead> {
    const sth = await treeHeadAt(this.db, size);
    if (!sth) throw notFound(`the log signed no tree head at size ${size}`);
    return sth;
  }

  cosignatures(size: number): Promise<Cosignature[]> {
    return cosignaturesOf(this.db, size);
  }

  /** The `log-verify-inclusion` object for leaf `index` in the tree of `size` leaves. */
  async inclusion(index: number, size: number) {
    if (size > (await this.size()) || index >= size)
      throw notFound(`leaf ${index} is not in a tree of ${size} the log holds`);
    const leaf = await readLeaf(this.db, index);
    if (!leaf) throw notFound(`no leaf ${index}`);
    const r = await runPlans(this.db, [planInclusionProof(index, size), planRoot(size)]);
    return inclusionProofObject({ leaf, index, treeSize: size, root: r[1]![0]!, path: r[0]! });
  }

  /** The `log-verify-consistency` object from `from` to `to`. */
  async consistency(from: number, to: number) {
    if (to > (await this.size()) || from > to)
      throw notFound(`no consistency proof from ${from} to ${to} in the log`);
    const r = await runPlans(this.db, [planConsistencyProof(from, to), planRoot(from), planRoot(to)]);
    return consistencyProofObject({
      oldSize: from,
      oldRoot: r[1]![0]!,
      newSize: to,
      newRoot: r[2]![0]!,
      proof: r[0]!,
    });
  }

  /**
   * A run's (or a group's) leaves with audit paths in one STH: the one signed at `size`, else the latest a
   * witness cosigned (the latest when none is). Every path comes from one batch of node reads.
   */
  async leaves(
    by: { tenantId: string; runId: string } | { tenantId: string; groupId: string },
    size?: number,
  ): Promise<{ sth: SignedTreeHead; cosignatures: Cosignature[]; leaves: LoggedLeaf[] }> {
    const sth = size === undefined ? await this.latest({ cosigned: true }) : await this.at(size);
    const found = await leavesOf(this.db, by, sth.treeSize);
    const paths = await runPlans(
      this.db,
      found.map((l) => planInclusionProof(l.index, sth.treeSize)),
    );
    return {
      sth,
      cosignatures: await this.cosignatures(sth.treeSize),
      leaves: found.map((l, i) => ({ ...l, path: paths[i]! })),
    };
  }

  /**
   * Keeps a witness's cosignature over an STH this log signed: the STH must be exactly the stored one
   * (`conflict`), the witness configured (`forbidden`), the signature valid (`bad_request`). Answers how many
   * distinct cosignatures the STH holds.
   */
  async cosign(sth: SignedTreeHead, c: Cosignature): Promise<number> {
    const stored = await treeHeadAt(this.db, sth.treeSize);
    if (
      !stored ||
      stored.root !== sth.root ||
      stored.signature !== sth.signature ||
      stored.timestampMs !== sth.timestampMs ||
      stored.logId !== sth.logId
    )
      throw new ControlPlaneError('conflict', `the log signed no such tree head at size ${sth.treeSize}`);
    if (!this.witnessKeys.includes(c.witness))
      throw new ControlPlaneError('forbidden', 'not a witness this log accepts cosignatures from');
    if (!verifyCosignature(stored, c))
      throw new ControlPlaneError('bad_request', 'the cosignature does not verify');
    return addCosignature(this.db, sth.treeSize, c);
  }
}
