// Completions batched along the audit chain: what finishes while a batch is in flight goes in the next one,
// signed in order (each names the one before); a refusal fails only its interval, the skipped ones after
// it are signed again from the last accepted link; an interval aborted before its turn sends nothing.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClientError } from '@everdict/client';
import { describe, expect, it } from 'vitest';
import { AUDIT_HEAD_FILE, AuditChain } from '../src/audit-chain.js';
import { Completions } from '../src/completions.js';
import type { CompletionResult, CompletionsReply } from '../src/port.js';
import type { CompleteBody } from '../src/protocol.js';

const addr = (n: number) => n.toString(16).padStart(64, '0');
type Item = CompleteBody & { runId: string };

/** A control plane that answers each batch with `answer(items)` once `release()` is called. */
function fakeApi(answer: (items: Item[]) => CompletionResult[]) {
  const batches: { runId: string; prev: unknown }[][] = [];
  let gate: (() => void) | undefined;
  return {
    batches,
    release: () => gate?.(),
    api: {
      async completeMany(items: Item[]): Promise<CompletionsReply> {
        batches.push(items.map((i) => ({ runId: i.runId, prev: i.attestation.prev })));
        if (batches.length === 1) await new Promise<void>((r) => (gate = r));
        return { results: answer(items) };
      },
    },
  };
}

/** A request whose "attestation" records the prev it was signed with; its address is fixed per run. */
const request = (runId: string, n: number, aborted = () => false) => ({
  runId,
  sign: (prev: string | undefined) =>
    aborted()
      ? null
      : { address: addr(n), body: { epoch: 1, outputs: {}, attestation: { prev: prev ?? null } } },
});

describe('Completions', () => {
  it('batches what finishes meanwhile, signed in chain order; the chain advances per settled link', async () => {
    const f = fakeApi((items) => items.map(() => ({ outcome: 'settled' as const })));
    const chain = new AuditChain();
    const q = new Completions(f.api, chain);
    const first = q.submit(request('r1', 1));
    await new Promise((r) => setImmediate(r));
    const rest = [q.submit(request('r2', 2)), q.submit(request('r3', 3))];
    f.release();
    expect(await Promise.all([first, ...rest])).toEqual([true, true, true]);
    expect(f.batches).toEqual([
      [{ runId: 'r1', prev: null }],
      [
        { runId: 'r2', prev: addr(1) },
        { runId: 'r3', prev: addr(2) },
      ],
    ]);
    expect(chain.head).toBe(addr(3));
    expect(q.batches).toBe(2);
  });

  it('a refusal fails its interval only; the skipped ones are signed again from the last accepted link', async () => {
    let round = 0;
    const refusal = new Error('409 stale_lease');
    const f = fakeApi((items) => {
      round += 1;
      if (round === 1) return items.map(() => ({ outcome: 'settled' as const }));
      if (round === 2)
        return [
          { outcome: 'settled' },
          { outcome: 'refused', error: refusal },
          { outcome: 'skipped' },
        ] as CompletionResult[];
      return items.map(() => ({ outcome: 'settled' as const }));
    });
    const chain = new AuditChain();
    const q = new Completions(f.api, chain);
    let abortR5 = false;
    const first = q.submit(request('r1', 1));
    await new Promise((r) => setImmediate(r));
    const r2 = q.submit(request('r2', 2));
    const r3 = q.submit(request('r3', 3));
    const r4 = q.submit(request('r4', 4));
    const r5 = q.submit(request('r5', 5, () => abortR5));
    abortR5 = true; // aborted before its turn: never signed, never sent
    f.release();
    await expect(r3).rejects.toBe(refusal);
    expect(await Promise.all([first, r2, r4, r5])).toEqual([true, true, true, false]);
    expect(f.batches).toEqual([
      [{ runId: 'r1', prev: null }],
      [
        { runId: 'r2', prev: addr(1) },
        { runId: 'r3', prev: addr(2) },
        { runId: 'r4', prev: addr(3) },
      ],
      [{ runId: 'r4', prev: addr(2) }],
    ]);
    expect(chain.head).toBe(addr(4));
  });

  it('a failed call rejects its batch and leaves the chain where it was', async () => {
    const chain = new AuditChain();
    const q = new Completions(
      {
        completeMany: async () => {
          throw new Error('network');
        },
      },
      chain,
    );
    await expect(q.submit(request('r1', 1))).rejects.toThrow('network');
    expect(chain.head).toBeUndefined();
  });

  it('a call that got no answer is sent again, the same bytes: a control plane that settled it answers settled', async () => {
    const chain = new AuditChain();
    chain.advance(addr(100));
    const sent: Item[][] = [];
    let recorded = addr(100);
    const q = new Completions(
      {
        completeMany: async (items: Item[]): Promise<CompletionsReply> => {
          sent.push(items);
          const prev = items[0]?.attestation.prev;
          if (sent.length === 1) {
            recorded = addr(1); // settled and committed ... and the answer is lost
            throw new ClientError('network', 0, 'no answer from the control plane: socket hang up');
          }
          // The same epoch and attestation again: the settled run (apps/control-plane completion.ts).
          if (recorded === addr(1) && prev === addr(100)) return { results: [{ outcome: 'settled' }] };
          return { results: [{ outcome: 'refused', error: new Error('409 stale_lease') }] };
        },
      },
      chain,
    );
    expect(await q.submit(request('r1', 1))).toBe(true);
    expect(sent).toHaveLength(2);
    expect(sent[1]).toEqual(sent[0]);
    expect(chain.head).toBe(addr(1));
  });

  it('an item the control plane could not settle (5xx, nothing written) is sent again', async () => {
    const chain = new AuditChain();
    let call = 0;
    const q = new Completions(
      {
        completeMany: async (items: Item[]): Promise<CompletionsReply> => {
          call += 1;
          if (call === 1)
            return {
              results: items.map((_, i) =>
                i === 0
                  ? { outcome: 'refused', error: new ClientError('unavailable', 503, 'database down') }
                  : { outcome: 'skipped' },
              ),
            };
          return { results: items.map(() => ({ outcome: 'settled' as const })) };
        },
      },
      chain,
    );
    expect(await q.submit(request('r1', 1))).toBe(true);
    expect(call).toBe(2);
    expect(chain.head).toBe(addr(1));
  });

  it('after a call that got no answer, a refusal naming one of its links as accepted resumes the chain there', async () => {
    const chain = new AuditChain();
    let call = 0;
    const sent: { runId: string; prev: unknown }[][] = [];
    const mismatch = Object.assign(new Error('409 attestation_mismatch'), {
      problem: { code: 'attestation_mismatch', details: { expected: addr(1) } },
    });
    const q = new Completions(
      {
        completeMany: async (items: Item[]) => {
          call += 1;
          sent.push(items.map((i) => ({ runId: i.runId, prev: i.attestation.prev })));
          if (call === 1) throw new Error('socket hang up'); // the control plane settled r1, then died
          if (call === 2) return { results: [{ outcome: 'refused', error: mismatch }] };
          return { results: [{ outcome: 'settled' }] };
        },
      },
      chain,
    );
    await expect(q.submit(request('r1', 1))).rejects.toThrow('socket hang up');
    expect(await q.submit(request('r2', 2))).toBe(true);
    expect(sent).toEqual([
      [{ runId: 'r1', prev: null }],
      [{ runId: 'r2', prev: null }],
      [{ runId: 'r2', prev: addr(1) }],
    ]);
    expect(chain.head).toBe(addr(2));
    // A mismatch naming a link this runner never sent unanswered fails its interval.
    const other = Object.assign(new Error('409'), {
      problem: { code: 'attestation_mismatch', details: { expected: addr(9) } },
    });
    const q2 = new Completions(
      { completeMany: async () => ({ results: [{ outcome: 'refused', error: other }] }) },
      chain,
    );
    await expect(q2.submit(request('r3', 3))).rejects.toBe(other);
    expect(chain.head).toBe(addr(2));
  });

  it('a runner restarted after a call that got no answer resumes from the link the control plane names', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'completions-'));
    try {
      const file = join(dir, AUDIT_HEAD_FILE);
      const before = new AuditChain(file);
      before.advance(addr(100));
      // The control plane records r1's link (addr(1)) after addr(100), then its answer is lost.
      let recorded = addr(100);
      const first = new Completions(
        {
          completeMany: async (items: Item[]) => {
            if (items[0]?.attestation.prev === recorded) recorded = addr(1);
            throw new Error('socket hang up');
          },
        },
        before,
      );
      await expect(first.submit(request('r1', 1))).rejects.toThrow('socket hang up');
      expect(before.head).toBe(addr(100));
      // The process restarts on the same state directory: the head file still says addr(100).
      const chain = new AuditChain(file);
      const sent: unknown[] = [];
      const controlPlane = {
        completeMany: async (items: Item[]): Promise<CompletionsReply> => {
          sent.push(items.map((i) => i.attestation.prev));
          const prev = items[0]?.attestation.prev;
          if (prev !== recorded)
            return {
              results: items.map((_, i) =>
                i === 0
                  ? {
                      outcome: 'refused',
                      error: Object.assign(new Error('409 attestation_mismatch'), {
                        problem: { code: 'attestation_mismatch', details: { expected: recorded } },
                      }),
                    }
                  : { outcome: 'skipped' },
              ),
            };
          recorded = addr(2);
          return { results: [{ outcome: 'settled' }] };
        },
      };
      expect(await new Completions(controlPlane, chain).submit(request('r2', 2))).toBe(true);
      expect(sent).toEqual([[addr(100)], [addr(1)]]);
      expect(chain.head).toBe(addr(2));
      expect(readFileSync(file, 'utf8').trim()).toBe(addr(2));
      // Resumed once: addr(1) is no longer taken, nor a link this runner never signed.
      const again = new AuditChain(file);
      recorded = addr(1);
      await expect(new Completions(controlPlane, again).submit(request('r3', 3))).rejects.toThrow(
        'attestation_mismatch',
      );
      recorded = addr(9);
      await expect(new Completions(controlPlane, again).submit(request('r4', 4))).rejects.toThrow(
        'attestation_mismatch',
      );
      expect(again.head).toBe(addr(2));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  describe('two batches in flight', () => {
    /** A control plane whose every call waits for its own `answer(i, results)` (i: the call's index). */
    function gatedApi() {
      const calls: { items: { runId: string; prev: unknown }[]; free: number | undefined }[] = [];
      const gates: ((reply: CompletionsReply) => void)[] = [];
      return {
        calls,
        answer: (i: number, results: CompletionResult[]) => gates[i]!({ results }),
        api: {
          completeMany(items: Item[], next?: { free: number }): Promise<CompletionsReply> {
            calls.push({
              items: items.map((it) => ({ runId: it.runId, prev: it.attestation.prev })),
              free: next?.free,
            });
            return new Promise<CompletionsReply>((r) => gates.push(r));
          },
        },
      };
    }
    const settled = (n: number) => Array.from({ length: n }, () => ({ outcome: 'settled' as const }));
    const tick = () => new Promise((r) => setImmediate(r));
    const prevRefused = (expected: string) =>
      Object.assign(new Error("audit_prev is not the runner's previous attestation"), {
        problem: { code: 'attestation_mismatch', details: { expected } },
      });

    it('what finishes while a batch is in flight is sent at once, signed on its last link', async () => {
      const f = gatedApi();
      const chain = new AuditChain();
      chain.advance(addr(100));
      const q = new Completions(f.api, chain, undefined, undefined, 2);
      const r1 = q.submit(request('r1', 1));
      await tick();
      const r2 = q.submit(request('r2', 2));
      await tick();
      const r3 = q.submit(request('r3', 3)); // two in flight: waits
      await tick();
      expect(f.calls.map((c) => c.items)).toEqual([
        [{ runId: 'r1', prev: addr(100) }],
        [{ runId: 'r2', prev: addr(1) }],
      ]);
      f.answer(0, settled(1));
      expect(await r1).toBe(true);
      await tick();
      expect(f.calls[2]?.items).toEqual([{ runId: 'r3', prev: addr(2) }]);
      f.answer(2, settled(1)); // answered before the one sent earlier: taken after it
      await tick();
      expect(chain.head).toBe(addr(1));
      f.answer(1, settled(1));
      expect(await Promise.all([r2, r3])).toEqual([true, true]);
      expect(chain.head).toBe(addr(3));
    });

    it('a batch that overtook the one before is refused whole and signed again from the head', async () => {
      const f = gatedApi();
      const chain = new AuditChain();
      chain.advance(addr(100));
      const q = new Completions(f.api, chain, undefined, undefined, 2);
      const r1 = q.submit(request('r1', 1));
      const r2 = q.submit(request('r2', 2));
      const r3 = q.submit(request('r3', 3)); // two in flight: waits
      await tick();
      // The control plane took the second batch first: its first link names r1, which it does not hold.
      f.answer(1, [{ outcome: 'refused', error: prevRefused(addr(100)) }]);
      await tick();
      expect(f.calls).toHaveLength(2);
      f.answer(0, settled(1));
      expect(await r1).toBe(true);
      await tick();
      // r3 went out behind r2 when r1's answer was taken (r2's refusal not yet read): refused as well.
      f.answer(2, [{ outcome: 'refused', error: prevRefused(addr(1)) }]);
      await tick();
      expect(f.calls.map((c) => c.items)).toEqual([
        [{ runId: 'r1', prev: addr(100) }],
        [{ runId: 'r2', prev: addr(1) }],
        [{ runId: 'r3', prev: addr(2) }],
        [
          { runId: 'r2', prev: addr(1) },
          { runId: 'r3', prev: addr(2) },
        ],
      ]);
      f.answer(3, settled(2));
      expect(await Promise.all([r2, r3])).toEqual([true, true]);
      expect(chain.head).toBe(addr(3));
    });

    it('after a refusal in the first, the one behind it is signed again from the last accepted link', async () => {
      const f = gatedApi();
      const chain = new AuditChain();
      chain.advance(addr(100));
      const q = new Completions(f.api, chain, undefined, undefined, 2);
      const stale = new Error('409 stale_lease');
      const r1 = q.submit(request('r1', 1));
      const r2 = q.submit(request('r2', 2));
      const r3 = q.submit(request('r3', 3)); // waits: two in flight
      await tick();
      f.answer(0, [{ outcome: 'refused', error: stale }]);
      await expect(r1).rejects.toBe(stale);
      await tick();
      expect(f.calls).toHaveLength(2); // held: the batch behind names r1, which was refused
      f.answer(1, [{ outcome: 'refused', error: prevRefused(addr(100)) }]);
      await tick();
      expect(f.calls.map((c) => c.items)).toEqual([
        [{ runId: 'r1', prev: addr(100) }],
        [{ runId: 'r2', prev: addr(1) }],
        [
          { runId: 'r2', prev: addr(100) },
          { runId: 'r3', prev: addr(2) },
        ],
      ]);
      f.answer(2, settled(2));
      expect(await Promise.all([r2, r3])).toEqual([true, true]);
      expect(chain.head).toBe(addr(3));
    });

    it("a key's first link is not sent behind another batch", async () => {
      const f = gatedApi();
      const chain = new AuditChain();
      const q = new Completions(f.api, chain, undefined, undefined, 2);
      const r1 = q.submit(request('r1', 1));
      const r2 = q.submit(request('r2', 2));
      await tick();
      expect(f.calls).toHaveLength(1);
      f.answer(0, settled(1));
      await tick();
      expect(f.calls[1]?.items).toEqual([{ runId: 'r2', prev: addr(1) }]);
      f.answer(1, settled(1));
      expect(await Promise.all([r1, r2])).toEqual([true, true]);
    });

    it('each batch in flight asks for the leases its items free; each answer returns what it asked', async () => {
      const f = gatedApi();
      const wants: number[] = [];
      const answered: { settled: readonly string[]; asked: number }[] = [];
      const chain = new AuditChain();
      chain.advance(addr(100));
      const q = new Completions(
        f.api,
        chain,
        undefined,
        {
          want: (n) => {
            wants.push(n);
            return n;
          },
          answered: (s, _leases, asked) => answered.push({ settled: s, asked }),
        },
        2,
      );
      const r1 = q.submit(request('r1', 1));
      const r2 = q.submit(request('r2', 2));
      await tick();
      expect(f.calls.map((c) => c.free)).toEqual([1, 1]);
      f.answer(0, settled(1));
      f.answer(1, [{ outcome: 'refused', error: prevRefused(addr(100)) }]);
      expect(await r1).toBe(true);
      await tick();
      expect(answered).toEqual([
        { settled: ['r1'], asked: 1 },
        { settled: [], asked: 1 },
      ]);
      f.answer(2, settled(1));
      expect(await r2).toBe(true);
      expect(wants).toEqual([1, 1, 1]);
    });
  });
});
