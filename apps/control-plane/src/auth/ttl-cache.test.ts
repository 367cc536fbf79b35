// The replica cache under API keys and runner credentials: entries live ttlMs, evict forgets one or all, and
// a lookup begun before any eviction is not remembered (the generation guard).
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
