// Flow control of a relayed terminal (relay.ts): a sender's window of unacknowledged bytes, and a receiver's
// count of consumed bytes that says when to acknowledge.

/** The bytes a sender may still have unacknowledged before it waits. */
export class Window {
  sent = 0;
  acked = 0;
  #waiters: (() => void)[] = [];
  constructor(readonly size: number) {}
  get open(): boolean {
    return this.sent - this.acked < this.size;
  }
  ack(bytes: number): void {
    if (bytes > this.acked) this.acked = bytes;
    if (this.open) for (const w of this.#waiters.splice(0)) w();
  }
  whenOpen(): Promise<void> {
    return this.open ? Promise.resolve() : new Promise((r) => this.#waiters.push(r));
  }
  release(): void {
    for (const w of this.#waiters.splice(0)) w();
  }
}

/** Counts consumed bytes and says when an ack is due (each quarter window). */
export class Consumed {
  bytes = 0;
  #acked = 0;
  constructor(private readonly every: number) {}
  add(n: number): number | null {
    this.bytes += n;
    if (this.bytes - this.#acked < this.every) return null;
    this.#acked = this.bytes;
    return this.bytes;
  }
}
