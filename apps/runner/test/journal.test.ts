// The journal: bounded batches in order, numbered events, and a root equal to the digest of the canonical
// JSONL of exactly what was sent (what the control plane recomputes from the events it stored).

import { ClientError } from '@everdict/client';
import type { TraceEvent } from '@everdict/run-model';
import { blake3, bytesToHex } from '@everdict/runrecord';
import { canonicalJsonl, StreamingDigest } from '@everdict/trajectory-store';
import { describe, expect, it, vi } from 'vitest';
import { Journal } from '../src/index.js';

describe('Journal', () => {
  it('sends bounded batches in order and roots the canonical JSONL of what it sent', async () => {
    const batches: TraceEvent[][] = [];
    const api = {
      events: async (_runId: string, _epoch: number, events: TraceEvent[]) => {
        batches.push(events);
      },
    };
    const journal = await Journal.open(api, 'run-1', 3, { maxEvents: 4, flushMs: 60_000 });
    for (let i = 0; i < 10; i++) await journal.append({ type: 'log', level: 'info', message: `line ${i}` });
    const root = await journal.close();
    expect(batches.map((b) => b.length)).toEqual([4, 4, 2]);
    const sent = batches.flat();
    expect(sent.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(sent.every((e) => e.runId === 'run-1')).toBe(true);
    expect(root).toBe(bytesToHex(blake3(new TextEncoder().encode(canonicalJsonl(sent)))));
  });

  it('refuses further events once the control plane refused a batch', async () => {
    const api = {
      events: async () => {
        throw new Error('409 stale_lease');
      },
    };
    const journal = await Journal.open(api, 'run-1', 1, { maxEvents: 1 });
    await expect(journal.append({ type: 'log', level: 'info', message: 'a' })).rejects.toThrow('stale_lease');
    await expect(journal.append({ type: 'log', level: 'info', message: 'b' })).rejects.toThrow('stale_lease');
    await expect(journal.close()).rejects.toThrow('stale_lease');
  });

  it('a batch that got no answer is sent again, the same events; the root counts them once', async () => {
    const calls: TraceEvent[][] = [];
    const api = {
      events: async (_runId: string, _epoch: number, events: TraceEvent[]) => {
        calls.push(events);
        // Stored, and the answer lost (the store skips the same batch when it comes again).
        if (calls.length === 1) throw new ClientError('network', 0, 'no answer from the control plane');
      },
    };
    const journal = await Journal.open(api, 'run-1', 1, { maxEvents: 2, flushMs: 60_000 });
    for (const m of ['a', 'b', 'c']) await journal.append({ type: 'log', level: 'info', message: m });
    const root = await journal.close();
    expect(calls.map((b) => b.map((e) => e.seq))).toEqual([[0, 1], [0, 1], [2]]);
    expect(calls[1]).toEqual(calls[0]);
    const sent = [...calls[1]!, ...calls[2]!];
    expect(root).toBe(bytesToHex(blake3(new TextEncoder().encode(canonicalJsonl(sent)))));
  });

  it('an abandoned journal does not send a failed batch again', async () => {
    let calls = 0;
    const api = {
      events: async () => {
        calls += 1;
        throw new ClientError('network', 0, 'no answer from the control plane');
      },
    };
    const journal = await Journal.open(api, 'run-1', 1, { maxEvents: 1, flushMs: 60_000 });
    const appended = journal.append({ type: 'log', level: 'info', message: 'a' });
    journal.abandon();
    await expect(appended).rejects.toBeInstanceOf(Error);
    expect(calls).toBe(1);
  });

  it('the root of an empty interval is the digest of zero bytes', async () => {
    const journal = await Journal.open({ events: async () => {} }, 'run-1', 1);
    expect(await journal.close()).toBe(bytesToHex(blake3(new Uint8Array())));
  });

  it('a closed journal gives its digest, reset, to the next one; an abandoned one keeps its own', async () => {
    const api = { events: async () => {} };
    const rootOf = (sent: TraceEvent[]) => bytesToHex(blake3(new TextEncoder().encode(canonicalJsonl(sent))));
    const open = async (runId: string) => {
      const sent: TraceEvent[] = [];
      const j = await Journal.open(
        { events: async (_r: string, _e: number, events: TraceEvent[]) => void sent.push(...events) },
        runId,
        1,
        { flushMs: 60_000 },
      );
      return { j, sent };
    };
    // Warm: a closed journal leaves a spare.
    await (await Journal.open(api, 'warm', 1)).close();
    const create = vi.spyOn(StreamingDigest, 'create');
    try {
      const a = await open('run-a');
      await a.j.append({ type: 'log', level: 'info', message: 'a' });
      const rootA = await a.j.close();
      const b = await open('run-b');
      await b.j.append({ type: 'log', level: 'info', message: 'b' });
      const rootB = await b.j.close();
      expect(create).not.toHaveBeenCalled();
      expect(rootA).toBe(rootOf(a.sent));
      expect(rootB).toBe(rootOf(b.sent)); // reset: nothing of run-a's events in it
      await expect(b.j.append({ type: 'log', level: 'info', message: 'late' })).rejects.toThrow('closed');
      // Abandoned (a batch may still be in flight): its digest is not handed on.
      const c = await open('run-c');
      c.j.abandon();
      const d = await open('run-d');
      expect(create).toHaveBeenCalledTimes(1);
      expect(await d.j.close()).toBe(rootOf([]));
    } finally {
      create.mockRestore();
    }
  });

  it('a control plane that does not answer stops the appends: one batch in flight, the next one full', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const calls: number[] = [];
      const api = {
        events: (_r: string, _e: number, events: TraceEvent[]) =>
          new Promise<void>(() => void calls.push(events.length)),
      };
      const journal = await Journal.open(api, 'run-1', 1, { maxEvents: 4, flushMs: 10 });
      // One small event per tick of the flush timer, until an append no longer resolves.
      let done = 0;
      let blocked: Promise<void> | undefined;
      for (let i = 0; i < 50 && blocked === undefined; i++) {
        const append = journal.append({ type: 'log', level: 'info', message: `line ${i}` });
        const settled = await Promise.race([append.then(() => true), Promise.resolve().then(() => false)]);
        if (settled) done += 1;
        else blocked = append;
        await vi.advanceTimersByTimeAsync(10);
      }
      // The first tick sent [line 0]; while it is in flight the timer sends nothing, and the next batch
      // fills to maxEvents: its fourth event waits (before, every tick queued another batch behind).
      expect(blocked).toBeDefined();
      expect(done).toBe(4);
      expect(calls).toEqual([1]);
      // Another producer (stderr) waits too: a full batch is queued behind the one in flight.
      let other = false;
      void journal.append({ type: 'log', level: 'info', message: 'stderr' }).then(() => {
        other = true;
      });
      await vi.advanceTimersByTimeAsync(100);
      expect(other).toBe(false);
      journal.abandon();
    } finally {
      vi.useRealTimers();
    }
  });
});
