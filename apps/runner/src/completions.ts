// Completions, batched along the key's audit chain: every interval that finished waits here for its turn;
// whenever no batch is in flight, all that wait (≤ 64) are signed in order — each attestation's
// `audit_prev` the address of the one before — and sent in ONE `POST /runner/v1/completions`. The control
// plane settles them in that order and stops at the first refusal; the chain advances over each settled
// one, a refused one fails its interval, and the ones after it (skipped: they named a link the control
// plane did not accept) are signed again on the next batch. Serial delivery of one link at a time made
// the chain the runner's bottleneck (README, "Figures"); batching keeps the order and the rule.
//
// The next leases ride on the batch (`NextLeases`, the daemon's): the batch asks for as many as its
// settled items will free (`next: {free}`), and the answer's leases are handed over together with which
// runs settled — before any of their intervals is told — so a busy runner needs no lease request of its own
// per freed slot.
import type { Hex } from '@everdict/runrecord';
import type { AuditChain } from './audit-chain.js';
import { RunnerError } from './errors.js';
import type { CompletionResult, CompletionsReply, RunnerApi } from './port.js';
import type { CompleteBody, Lease } from './protocol.js';

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
  readonly request: CompletionRequest;
  readonly resolve: (delivered: boolean) => void;
  readonly reject: (err: unknown) => void;
}

export class Completions {
  readonly #api: Pick<RunnerApi, 'completeMany'>;
  readonly #chain: AuditChain;
  readonly #max: number;
  readonly #next: NextLeases | undefined;
  #waiting: Waiting[] = [];
  /** Links sent in a call that got no answer: the control plane may have accepted some of them. */
  readonly #unanswered = new Set<Hex>();
  #sending = false;
  /** Batches sent, for tests and logs. */
  batches = 0;

  constructor(api: Pick<RunnerApi, 'completeMany'>, chain: AuditChain, max = MAX_BATCH, next?: NextLeases) {
    this.#api = api;
    this.#chain = chain;
    this.#max = max;
    this.#next = next;
  }

  /** Resolves true once the control plane settled the run, false when aborted before sending; rejects with its refusal. */
  submit(request: CompletionRequest): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.#waiting.push({ request, resolve, reject });
      void this.#pump();
    });
  }

  async #pump(): Promise<void> {
    if (this.#sending) return;
    this.#sending = true;
    try {
      while (this.#waiting.length > 0) await this.#sendOne();
    } finally {
      this.#sending = false;
    }
  }

  async #sendOne(): Promise<void> {
    const taken = this.#waiting.splice(0, this.#max);
    const batch: { w: Waiting; address: Hex; body: CompleteBody }[] = [];
    let prev = this.#chain.head;
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
    const asked = Math.max(0, this.#next?.want(batch.length) ?? 0);
    let reply: CompletionsReply;
    try {
      reply = await this.#api.completeMany(
        batch.map((b) => ({ runId: b.w.request.runId, ...b.body })),
        asked > 0 ? { free: asked } : undefined,
      );
      if (reply.results.length !== batch.length)
        throw new RunnerError('bad_state', `${reply.results.length} results for ${batch.length} completions`);
    } catch (err) {
      this.#next?.answered([], [], asked);
      for (const b of batch) {
        this.#unanswered.add(b.address);
        b.w.reject(err);
      }
      return;
    }
    const results: CompletionResult[] = reply.results;
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
        if (accepted !== undefined && this.#unanswered.has(accepted)) {
          // A call that got no answer (the control plane died mid-batch) had this link of ours accepted:
          // the chain continues from it, and this completion is signed again after it.
          this.#unanswered.clear();
          this.#chain.advance(accepted);
          again.push(b.w);
        } else b.w.reject(r.error);
      } else {
        again.push(b.w); // skipped after a refusal (or not answered): signed again with the chain's head
      }
    }
    this.#chain.persist();
    this.#next?.answered(
      settled.map((w) => w.request.runId),
      reply.leases ?? [],
      asked,
    );
    for (const w of settled) w.resolve(true);
    this.#waiting.unshift(...again);
  }
}

/** The link the control plane holds as this key's last, from an `attestation_mismatch` refusal of `audit_prev`. */
function acceptedLink(err: Error): Hex | undefined {
  const problem = (err as { problem?: { code?: unknown; details?: { expected?: unknown } } }).problem;
  const expected = problem?.details?.expected;
  return problem?.code === 'attestation_mismatch' && typeof expected === 'string' ? expected : undefined;
}
