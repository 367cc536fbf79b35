// The runner key's audit chain (issue 18 §4): each attestation's `audit_prev` is the address of the one
// this key signed before, across every slot, in signing order — so an interval deleted from the runner's
// history breaks the chain (`GET /runners/:id/audit`, `everdict-runrecord verify-audit`). Signing and
// delivering a link is serialized across slots (the control plane accepts only the next link), and the
// chain advances only once the control plane accepted the completion; the head is kept in a file of the
// state directory (`audit.head`, mode 0600) so a restart continues the chain.
import { openSync, readFileSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import type { Hex } from '@everdict/runrecord';

export const AUDIT_HEAD_FILE = 'audit.head';

export class AuditChain {
  #head: Hex | undefined;
  /** The head file, open for writing in place once it exists (persist). */
  #fd: number | undefined;
  #queue: Promise<unknown> = Promise.resolve();

  /** `file`: where the chain's head is kept (absent: in memory only). */
  constructor(private readonly file?: string) {
    if (!file) return;
    try {
      const text = readFileSync(file, 'utf8').trim();
      if (/^[0-9a-f]{64}$/.test(text)) this.#head = text;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
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
   * Writes the head to the chain's file. The first time atomically (a temporary file renamed, mode 0600);
   * after that in place, through the file kept open: every head is the same 65 bytes (64 hex and a newline)
   * written at offset 0 by one `write`, which a killed process cannot leave half done — a rename per
   * completion batch cost the event loop ≈ 0.5–3 ms under load (README, "Figures").
   */
  persist(): void {
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
}
