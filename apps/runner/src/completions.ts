// Completions, batched along the key's audit chain: every interval that finished waits here for its turn;
// all that wait (≤ 64) are signed in order — each attestation's `audit_prev` the address of the one before —
// and sent in ONE `POST /runner/v1/completions`. The control plane settles them in that order and stops at
// the first refusal; the chain advances over each settled one, a refused one fails its interval, and the
// ones after it (skipped: they named a link the control plane did not accept) are signed again on the next
// batch. Serial delivery of one link at a time made the chain the runner's bottleneck (README, "Figures");
// batching keeps the order and the rule.
//
// More than one batch may be in flight (`maxInFlight`; MAX_IN_FLIGHT, the default, is one): what finishes
// while one is sent goes at once, signed on the last link of the one in flight, instead of waiting for its
// answer. The control plane orders them — a batch takes the key's
// audit lock and commits before the next one reads the chain's head — and when the second overtakes the
// first (arrives first, or the first is refused or lost), its first link names one the control plane does
// not hold: refused with nothing written, it is signed again from the chain's head. Answers are taken in
// the order the batches were sent, so the chain advances in chain order; after an answer that settled less
// than its whole batch nothing more is sent until the batches in flight are answered.
//
// The next leases ride on the batch (`NextLeases`, the daemon's): the batch asks for as many as its settled
// items will free (`next: {free}`; the control plane grants only into a batch that settled whole), and the
// answer's leases are handed over together with which runs settled — before any of their intervals is told —
// so a busy runner needs no lease request of its own per freed slot.
import type { Hex } from '@everdict/runrecord';
import type { AuditChain, SentLinks } from './audit-chain.js';
import { RunnerError } from './errors.js';
import type { CompletionResult, CompletionsReply, RunnerApi } from './port.js';
import type { CompleteBody, Lease } from './protocol.js';
import { isTransient, retryDelayMs } from './transient.js';

export const MAX_BATCH = 64;

export interface CompletionRequest {
  readonly runId: string;
  /**
   * Signs the interval's attestation with `audit_prev = prev` and gives the completion to send and the
   * attestation's address — or null when the interval was aborted meanwhile (nothing is sent for it).
   */
  sign(prev: Hex | undefined): { address: Hex; body: CompleteBody } | null;
}

/** Who takes the leases granted with a batch (the daemon): how many to ask for, and what came. */
export interface NextLeases {
  /** How many leases to ask for with a batch that settles (at most) `settling` intervals; ≤ 0 asks none. */
  want(settling: number): number;
  /**
   * The batch's answer (or its failure: nothing settled, no leases): the runs it settled — their leases are
   * gone — and the leases granted with it; `asked` is what `want` answered for it. Called once per batch,
   * before any of its intervals is told.
   */
  answered(settled: readonly string[], leases: readonly Lease[], asked: number): void;
}

interface Waiting {
  /** Submission order: what is signed again keeps its place before what came after it. */
  readonly seq: number;
  readonly request: CompletionRequest;
  readonly resolve: (delivered: boolean) => void;
  readonly reject: (err: unknown) => void;
}

/**
 * Batches in flight at once, by default. One: a second batch in flight was measured no faster (README,
 * "Figures": the control plane takes a key's batches one at a time under its audit lock, so the second mostly
 * waits there instead of here, and is refused whole when it overtakes). The option stays for a control plane
 * that holds that lock for less of its transaction.
 */
export const MAX_IN_FLIGHT = 1;

export class Completions {
  readonly #api: Pick<RunnerApi, 'completeMany'>;
  readonly #chain: AuditChain;
  readonly #max: number;
  readonly #next: NextLeases | undefined;
  readonly #maxInFlight: number;
  #waiting: Waiting[] = [];
  /** Batches sent and not yet answered (their answers are taken in the order they were sent). */
  #inFlight = 0;
  /** The last link signed in a batch in flight: the next batch's first `audit_prev` (while one is). */
  #tip: Hex | undefined;
  /** An answer settled less than its whole batch: nothing is sent until the batches in flight are answered. */
  #hold = false;
  /** The answers, taken in order (a later batch's answer waits for the earlier one's). */
  #answers: Promise<void> = Promise.resolve();
  #submitted = 0;
  /** A transient failure's pause: nothing is sent until it ends. */
  #paused = false;
  /** Transient failures in a row (the pause doubles with each). */
  #failures = 0;
  /** Batches sent, for tests and logs. */
  batches = 0;

  constructor(
    api: Pick<RunnerApi, 'completeMany'>,
    chain: AuditChain,
    max = MAX_BATCH,
    next?: NextLeases,
    maxInFlight = MAX_IN_FLIGHT,
  ) {
    this.#api = api;
    this.#chain = chain;
    this.#max = max;
    this.#next = next;
    this.#maxInFlight = Math.max(1, maxInFlight);
  }

  /** Resolves true once the control plane settled the run, false when aborted before sending; rejects with its refusal. */
  submit(request: CompletionRequest): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.#waiting.push({ seq: this.#submitted++, request, resolve, reject });
      this.#pump();
    });
  }

  #pump(): void {
    while (this.#waiting.length > 0 && !this.#hold && !this.#paused) {
      const limit = this.#chain.head === undefined ? 1 : this.#maxInFlight;
      if (this.#inFlight >= limit) return;
      this.#sendOne();
    }
  }

  #sendOne(): void {
    const taken = this.#waiting.splice(0, this.#max);
    // Sent while another batch is in flight, this one is signed on that batch's last link: speculative —
    // the control plane takes it only after that batch (the key's audit lock orders them; a batch that
    // arrives first is refused at its first item, nothing written, and signed again: see #take).
    const speculative = this.#inFlight > 0;
    // A key's first link is never sent speculatively: the control plane takes any `audit_prev` for a key
    // with no link yet, so a second batch that overtook the first would be accepted, and the first refused.
    const batch: { w: Waiting; address: Hex; body: CompleteBody }[] = [];
    let prev = speculative ? this.#tip : this.#chain.head;
    for (const w of taken) {
      let signed: ReturnType<CompletionRequest['sign']>;
      try {
        signed = w.request.sign(prev);
      } catch (err) {
        w.reject(err);
        continue;
      }
      if (signed === null) {
        w.resolve(false);
        continue;
      }
      batch.push({ w, ...signed });
      prev = signed.address;
    }
    if (batch.length === 0) return;
    this.batches += 1;
    this.#inFlight += 1;
    this.#tip = prev;
    // Every batch asks for the leases its items free, a batch behind another too: the control plane grants
    // only into a batch that settled whole (a speculative one refused at its first link is granted nothing,
    // its leases still held), and the daemon reserves what each batch in flight asked.
    const asked = Math.max(0, this.#next?.want(batch.length) ?? 0);
    // Its links are kept as unanswered (in the state directory) before the call: the control plane may
    // accept some and its answer be lost, the runner restarted meanwhile (AuditChain.resumeAt).
    let sent: SentLinks | undefined;
    const call = Promise.resolve()
      .then(() => {
        sent = this.#chain.sending(batch.map((b) => b.address));
        return this.#api.completeMany(
          batch.map((b) => ({ runId: b.w.request.runId, ...b.body })),
          asked > 0 ? { free: asked } : undefined,
        );
      })
      .then((reply) => {
        if (reply.results.length !== batch.length)
          throw new RunnerError(
            'bad_state',
            `${reply.results.length} results for ${batch.length} completions`,
          );
        return reply;
      });
    // Swallowed here: #take reads the outcome of `call` itself.
    call.catch(() => {});
    this.#answers = this.#answers.then(() => this.#take(batch, call, asked, speculative, () => sent));
  }

  async #take(
    batch: { w: Waiting; address: Hex; body: CompleteBody }[],
    call: Promise<CompletionsReply>,
    asked: number,
    speculative: boolean,
    sent: () => SentLinks | undefined,
  ): Promise<void> {
    try {
      await this.#settle(batch, call, asked, speculative, sent);
    } finally {
      this.#inFlight -= 1;
      if (this.#inFlight === 0) this.#hold = false;
      this.#pump();
    }
  }

  async #settle(
    batch: { w: Waiting; address: Hex; body: CompleteBody }[],
    call: Promise<CompletionsReply>,
    asked: number,
    speculative: boolean,
    sent: () => SentLinks | undefined,
  ): Promise<void> {
    let reply: CompletionsReply;
    try {
      reply = await call;
    } catch (err) {
      // No answer: its links stay unanswered (the chain's, kept since `sending`).
      this.#hold = true;
      this.#next?.answered([], [], asked);
      if (isTransient(err)) {
        // Not refused: signed again from the same head (the same bytes: Ed25519 is deterministic) and sent
        // again after a pause — unless aborted meanwhile (its lease lost or expired: then nothing is sent).
        this.#requeue(batch.map((b) => b.w));
        this.#pause();
      } else for (const b of batch) b.w.reject(err);
      return;
    }
    let transient = false;
    const results: CompletionResult[] = reply.results;
    const links = sent();
    if (links) this.#chain.answered(links, results[0]?.outcome === 'settled');
    const again: Waiting[] = [];
    const settled: Waiting[] = [];
    for (let i = 0; i < batch.length; i++) {
      const b = batch[i]!;
      const r = results[i];
      if (r?.outcome === 'settled') {
        this.#chain.advance(b.address, false); // the head's file is written once, below
        settled.push(b.w);
      } else if (r?.outcome === 'refused') {
        const accepted = acceptedLink(r.error);
        if (accepted !== undefined && this.#chain.resumeAt(accepted)) {
          // A call that got no answer (the control plane died mid-batch, maybe before this process restarted)
          // had this link of ours accepted: the chain continues from it, and this completion is signed again
          // after it.
          again.push(b.w);
        } else if (speculative && i === 0 && accepted !== undefined && isAuditPrevRefusal(r.error)) {
          // The speculative batch's first link named a link the control plane did not hold yet (this batch
          // overtook the one before) or will never hold (the one before was refused or lost): nothing of it
          // was written; it is signed again from the chain's head once the batches in flight are answered.
          again.push(b.w);
        } else if (isTransient(r.error)) {
          // The control plane could not settle it (its database, say): nothing of it was written.
          again.push(b.w);
          transient = true;
        } else b.w.reject(r.error);
      } else {
        again.push(b.w); // skipped after a refusal (or not answered): signed again with the chain's head
      }
    }
    this.#chain.persist();
    // Anything not settled breaks the links signed after it: a batch in flight behind this one is refused
    // (its first link names one the control plane does not hold), and none is sent until it is answered.
    if (again.length > 0 || settled.length < batch.length) this.#hold = true;
    this.#next?.answered(
      settled.map((w) => w.request.runId),
      reply.leases ?? [],
      asked,
    );
    for (const w of settled) w.resolve(true);
    this.#requeue(again);
    if (transient) this.#pause();
    else this.#failures = 0;
  }

  /** Puts `again` back in the queue at their places (before what was submitted after them). */
  #requeue(again: Waiting[]): void {
    if (again.length > 0) this.#waiting = [...again, ...this.#waiting].sort((a, b) => a.seq - b.seq);
  }

  /** Holds what waits for a pause after a transient failure (doubling with each in a row), then sends. */
  #pause(): void {
    const ms = retryDelayMs(this.#failures);
    this.#failures += 1;
    this.#paused = true;
    setTimeout(() => {
      this.#paused = false;
      this.#pump();
    }, ms);
  }
}

/** The link the control plane holds as this key's last, from an `attestation_mismatch` refusal of `audit_prev`. */
function acceptedLink(err: Error): Hex | undefined {
  const problem = (err as { problem?: { code?: unknown; details?: { expected?: unknown } } }).problem;
  const expected = problem?.details?.expected;
  return problem?.code === 'attestation_mismatch' && typeof expected === 'string' ? expected : undefined;
}

/** A refusal of `audit_prev` itself (not of the journal root or the signature, refused the same way). */
function isAuditPrevRefusal(err: Error): boolean {
  return err.message.includes('audit_prev');
}
