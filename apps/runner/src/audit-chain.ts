// The runner key's audit chain (issue 18 §4): each attestation's `audit_prev` is the address of the one
// this key signed before, across every slot, in signing order — so an interval deleted from the runner's
// history breaks the chain (`GET /runners/:id/audit`, `everdict-runrecord verify-audit`). Signing and
// delivering a link is serialized across slots (the control plane accepts only the next link), and the
// chain advances only once the control plane accepted the completion; the head is kept in a file of the
// state directory (`audit.head`, mode 0600) so a restart continues the chain. The links sent and not yet
// answered are kept beside it (`audit.head.sent`, written before their call): the control plane may have
// accepted some of them, and a restarted runner resumes from the one it names (`resumeAt`).
import { ftruncateSync, openSync, readFileSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import type { Hex } from '@everdict/runrecord';

export const AUDIT_HEAD_FILE = 'audit.head';

const ADDRESS = /^[0-9a-f]{64}$/;

/** One batch of links sent (`sending`): what its answer (`answered`) reports on. */
export interface SentLinks {
  readonly order: number;
  readonly addresses: readonly Hex[];
}

export class AuditChain {
  #head: Hex | undefined;
  /** The head file, open for writing in place once it exists (persist). */
  #fd: number | undefined;
  /**
   * Links sent whose answer was not taken (in flight, or the call got none), each with its batch's order
   * (0: sent by an earlier process). Only these may be named as the head the control plane holds.
   */
  readonly #unanswered = new Map<Hex, number>();
  /** The unanswered links' file, open for writing in place once it exists. */
  #sentFd: number | undefined;
  #sentDirty = false;
  #batches = 0;
  #queue: Promise<unknown> = Promise.resolve();

  /** `file`: where the chain's head is kept (absent: in memory only); its unanswered links in `<file>.sent`. */
  constructor(private readonly file?: string) {
    if (!file) return;
    const head = readLines(file)[0];
    if (head !== undefined && ADDRESS.test(head)) this.#head = head;
    for (const line of readLines(`${file}.sent`)) if (ADDRESS.test(line)) this.#unanswered.set(line, 0);
  }

  /** The last accepted link's address (undefined before the first). */
  get head(): Hex | undefined {
    return this.#head;
  }

  /**
   * Makes the next link: `sign(prev)` signs with `audit_prev = prev` and delivers; when it answers an
   * address, the chain advances to it (null: nothing was delivered, the chain stays). One link at a time.
   */
  link<T>(sign: (prev: Hex | undefined) => Promise<{ address: Hex | null; result: T }>): Promise<T> {
    const run = this.#queue.then(async () => {
      const { address, result } = await sign(this.#head);
      if (address !== null) this.advance(address);
      return result;
    });
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /**
   * The control plane accepted the link at `address` (whose `audit_prev` was the head): it is the head now.
   * `persist: false` defers the file to a `persist()` (a batch of links advanced at once writes it once).
   */
  advance(address: Hex, persist = true): void {
    this.#head = address;
    if (persist) this.persist();
  }

  /**
   * A batch of links is about to be sent: they are kept as unanswered — and written, before the call — until
   * its answer is taken, so a runner restarted after a call that got no answer still knows them.
   */
  sending(addresses: readonly Hex[]): SentLinks {
    const sent = { order: ++this.#batches, addresses };
    for (const a of addresses) this.#unanswered.set(a, sent.order);
    this.#sentDirty = true;
    this.#persistSent();
    return sent;
  }

  /**
   * The control plane answered the batch (settled, refused or skipped: none of its links is pending any
   * more). `settledAny`: it accepted one of them, after the head every batch sent before it had left — so
   * none of theirs is the head it holds. Written with the next `persist()`.
   */
  answered(sent: SentLinks, settledAny: boolean): void {
    for (const a of sent.addresses) this.#unanswered.delete(a);
    if (settledAny)
      for (const [a, order] of this.#unanswered) if (order < sent.order) this.#unanswered.delete(a);
    this.#sentDirty = true;
  }

  /**
   * A refusal named `expected` as the key's last link. When it is a link this runner sent and got no answer
   * for, the control plane accepted it: the chain resumes from it (true; written with the next `persist()`).
   * Any other link — never signed here, or already answered — leaves the chain as it was (false).
   */
  resumeAt(expected: Hex): boolean {
    if (!this.#unanswered.has(expected)) return false;
    this.#unanswered.clear();
    this.#sentDirty = true;
    this.advance(expected, false);
    return true;
  }

  /**
   * Writes the head to the chain's file. The first time atomically (a temporary file renamed, mode 0600);
   * after that in place, through the file kept open: every head is the same 65 bytes (64 hex and a newline)
   * written at offset 0 by one `write`, which a killed process cannot leave half done — a rename per
   * completion batch cost the event loop ≈ 0.5–3 ms under load (README, "Figures").
   *
   * The head goes first, the unanswered links after it: a process killed between the two writes then leaves
   * the new head with links it no longer needs (harmless), never the old head without the links that lead
   * past it — the control plane's head would be a link this runner could no longer resume from, and every
   * later completion refused `attestation_mismatch` until it paired again.
   */
  persist(): void {
    this.#persistHead();
    this.#persistSent();
  }

  #persistHead(): void {
    const address = this.#head;
    if (!this.file || address === undefined) return;
    const line = `${address}\n`;
    if (this.#fd === undefined) {
      writeFileSync(`${this.file}.tmp`, line, { mode: 0o600 });
      renameSync(`${this.file}.tmp`, this.file);
      this.#fd = openSync(this.file, 'r+');
      return;
    }
    writeSync(this.#fd, line, 0);
  }

  /**
   * Writes the unanswered links (64 hex and a newline each) when they changed: created like the head's
   * file, then in place — one `write` at offset 0 and a truncate. A process killed between the two leaves
   * whole lines of earlier unanswered links behind: links this key signed, never another's.
   */
  #persistSent(): void {
    if (!this.file || !this.#sentDirty) return;
    this.#sentDirty = false;
    const file = `${this.file}.sent`;
    const text = [...this.#unanswered.keys()].map((a) => `${a}\n`).join('');
    if (this.#sentFd === undefined) {
      writeFileSync(`${file}.tmp`, text, { mode: 0o600 });
      renameSync(`${file}.tmp`, file);
      this.#sentFd = openSync(file, 'r+');
      return;
    }
    writeSync(this.#sentFd, text, 0);
    ftruncateSync(this.#sentFd, text.length);
  }
}

function readLines(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    return [];
  }
}
