// The replica cache under API keys and runner credentials: entries live ttlMs, evict forgets one or all, and
// a lookup begun before any eviction is not remembered (the generation guard).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TtlCache } from './ttl-cache.js';

describe('TtlCache', () => {
  it('forgets an entry after its lifetime, on eviction, and everything on "*" or ""', () => {
    let t = 0;
    const cache = new TtlCache<number>(100, () => t);
    cache.set('a', 1, cache.begin());
    cache.set('b', 2, cache.begin());
    expect([cache.get('a'), cache.get('b')]).toEqual([1, 2]);
    t = 99;
    expect(cache.get('a')).toBe(1);
    t = 100;
    expect(cache.get('a')).toBeUndefined();
    cache.set('a', 1, cache.begin());
    cache.set('b', 2, cache.begin());
    cache.evict('a');
    expect([cache.get('a'), cache.get('b')]).toEqual([undefined, 2]);
    cache.evict('*');
    expect(cache.get('b')).toBeUndefined();
    cache.set('c', 3, cache.begin());
    cache.evict('');
    expect(cache.get('c')).toBeUndefined();
  });

  it('does not remember a lookup begun before an eviction of any key, or of all', () => {
    const cache = new TtlCache<string>(1_000, () => 0);
    for (const evicted of ['a', 'other', '*']) {
      const g = cache.begin(); // the lookup reads the ledger...
      cache.evict(evicted); // ...while a revocation is heard
      cache.set('a', 'stale', g);
      expect(cache.get('a')).toBeUndefined();
    }
    cache.set('a', 'fresh', cache.begin()); // a lookup begun after the eviction is remembered
    expect(cache.get('a')).toBe('fresh');
  });

  it('holds at most maxEntries (then starts over)', () => {
    const cache = new TtlCache<number>(1_000, () => 0, 2);
    cache.set('a', 1, cache.begin());
    cache.set('b', 2, cache.begin());
    cache.set('c', 3, cache.begin());
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([undefined, undefined, 3]);
  });
});

describe('TtlCache.lookup: one read per key at a time', () => {
  /** A read the test settles by hand. */
  function reads() {
    const started: { key: string; resolve: (v: string | undefined) => void; reject: (e: Error) => void }[] =
      [];
    const read = (key: string) =>
      new Promise<string | undefined>((resolve, reject) => started.push({ key, resolve, reject }));
    return { started, read };
  }
  const flush = () => new Promise((r) => setImmediate(r));

  it('shares one read among the lookups that miss while it is in flight, then answers from memory', async () => {
    const cache = new TtlCache<string>(1_000, () => 0);
    const { started, read } = reads();
    const answers = Array.from({ length: 16 }, () => cache.lookup('k', read));
    expect(started).toHaveLength(1);
    started[0]!.resolve('principal');
    expect(await Promise.all(answers)).toEqual(Array(16).fill('principal'));
    expect(await cache.lookup('k', read)).toBe('principal');
    expect(started).toHaveLength(1);
    // another key is another read
    void cache.lookup('other', read);
    expect(started).toHaveLength(2);
  });

  it('never remembers a refusal or a failed read: the next lookup reads again', async () => {
    const cache = new TtlCache<string>(1_000, () => 0);
    const { started, read } = reads();
    const refused = cache.lookup('k', read);
    started[0]!.resolve(undefined);
    expect(await refused).toBeUndefined();
    const failed = cache.lookup('k', read);
    const alsoFailed = cache.lookup('k', read);
    expect(started).toHaveLength(2);
    started[1]!.reject(new Error('database unavailable'));
    await expect(failed).rejects.toThrow('database unavailable');
    await expect(alsoFailed).rejects.toThrow('database unavailable');
    void cache.lookup('k', read);
    expect(started).toHaveLength(3);
  });

  it('an eviction detaches the read in flight: later lookups read again, and the early answer is not kept', async () => {
    for (const evicted of ['k', '*', '']) {
      const cache = new TtlCache<string>(1_000, () => 0);
      const { started, read } = reads();
      const early = cache.lookup('k', read); // reads the ledger before the revoking commit...
      cache.evict(evicted); // ...and the revocation is heard meanwhile
      const late = cache.lookup('k', read);
      expect(started).toHaveLength(2);
      started[0]!.resolve('stale');
      expect(await early).toBe('stale'); // what its own read said, as before the cache
      await flush();
      expect(cache.get('k')).toBeUndefined();
      started[1]!.resolve(undefined); // revoked
      expect(await late).toBeUndefined();
      expect(cache.get('k')).toBeUndefined();
    }
  });

  it('matches a model under any interleaving of lookups, answers, evictions and time', async () => {
    const KEYS = ['a', 'b'];
    const op = fc.oneof(
      fc.record({ t: fc.constant('lookup' as const), key: fc.constantFrom(...KEYS) }),
      fc.record({
        t: fc.constant('settle' as const),
        pick: fc.nat(),
        outcome: fc.constantFrom('value', 'refused', 'failed'),
      }),
      fc.record({ t: fc.constant('evict' as const), key: fc.constantFrom(...KEYS, '*') }),
      fc.record({ t: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 80 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), async (ops) => {
        let now = 0;
        const cache = new TtlCache<string>(100, () => now);
        const { started, read } = reads();
        // the model: remembered entries, the read each key's lookups share, and the generation
        const entries = new Map<string, { value: string; until: number }>();
        const attached = new Map<string, number>();
        const begunAt: number[] = [];
        const settled = new Set<number>();
        let generation = 0;
        const fresh = (k: string) => {
          const e = entries.get(k);
          if (e && e.until <= now) entries.delete(k);
          return entries.get(k);
        };
        for (const o of ops) {
          if (o.t === 'lookup') {
            const before = started.length;
            void cache.lookup(o.key, read).catch(() => undefined);
            const expectsRead = !fresh(o.key) && !attached.has(o.key);
            expect(started.length - before).toBe(expectsRead ? 1 : 0);
            if (expectsRead) {
              attached.set(o.key, before);
              begunAt.push(generation);
            }
          } else if (o.t === 'settle') {
            const open = started.map((_, i) => i).filter((i) => !settled.has(i));
            if (open.length === 0) continue;
            const i = open[o.pick % open.length]!;
            settled.add(i);
            const r = started[i]!;
            if (o.outcome === 'value') r.resolve(`v${i}`);
            else if (o.outcome === 'refused') r.resolve(undefined);
            else r.reject(new Error('down'));
            await flush();
            if (o.outcome === 'value' && begunAt[i] === generation)
              entries.set(r.key, { value: `v${i}`, until: now + 100 });
            if (attached.get(r.key) === i) attached.delete(r.key);
          } else if (o.t === 'evict') {
            cache.evict(o.key);
            generation += 1;
            for (const k of o.key === '*' ? KEYS : [o.key]) {
              entries.delete(k);
              attached.delete(k);
            }
          } else now += o.ms;
          for (const k of KEYS) expect(cache.get(k)).toBe(fresh(k)?.value);
        }
      }),
      { numRuns: 300 },
    );
  });
});
