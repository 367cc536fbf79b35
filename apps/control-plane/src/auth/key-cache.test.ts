// The cached key check: a verified key asks the ledger once, a revocation is refused at once on the revoking
// core and, by NOTIFY, on a core that did not revoke it; unknown keys are never remembered; a lookup in flight
// when a revocation is heard does not put the key back.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, type TestCore, testCore } from '../../test/core.js';
import { authService, hashKey } from '../services/auth.js';
import { KEYS_CHANNEL, KeyCache } from './key-cache.js';

describe('KeyCache', () => {
  it('forgets an entry after its lifetime, on eviction, and everything on "*"', () => {
    let t = 0;
    const cache = new KeyCache(() => t, 100);
    const p = { tenantId: 't', keyId: 'k', role: 'admin' as const, actor: 'k' };
    cache.set('a', p, cache.begin());
    cache.set('b', p, cache.begin());
    expect(cache.get('a')).toEqual(p);
    t = 100;
    expect(cache.get('a')).toBeUndefined();
    cache.set('a', p, cache.begin());
    cache.evict('a');
    expect(cache.get('a')).toBeUndefined();
    cache.set('a', p, cache.begin());
    cache.set('b', p, cache.begin());
    cache.evict('*');
    expect(cache.get('b')).toBeUndefined();
  });
});

describe('authenticate with the key cache (PGlite core)', () => {
  let t: TestCore;
  beforeAll(async () => {
    t = await testCore({ scheduler: { enabled: false } });
  });
  afterAll(() => t.close());

  it('a verified key costs no key query on its next requests', async () => {
    const made = await t.core.services.auth.createKey(t.admin, { role: 'member', label: 'cached' });
    const first = await t.core.services.auth.authenticate(made.key);
    // Mark the key revoked behind the core's back (no NOTIFY): the cached principal still answers...
    await sql`UPDATE api_keys SET revoked_at = now() WHERE id = ${made.id}`.execute(t.core.internals.deps.db);
    expect(await t.core.services.auth.authenticate(made.key)).toEqual(first);
    // ...until the revocation's NOTIFY (what another replica's revokeKey sends at its commit) arrives.
    await t.core.internals.ldb.notify(KEYS_CHANNEL, hashKey(made.key));
    await eventually(() =>
      t.core.services.auth.authenticate(made.key).then(
        () => undefined,
        (e: { code?: string }) => e.code,
      ),
    );
    await expect(t.core.services.auth.authenticate(made.key)).rejects.toMatchObject({ code: 'unauthorized' });
  });

  it('revokeKey refuses the key at once on the revoking core', async () => {
    const made = await t.core.services.auth.createKey(t.admin, { role: 'member', label: 'revoked' });
    await t.core.services.auth.authenticate(made.key);
    await t.core.services.auth.revokeKey(t.admin, made.id);
    await expect(t.core.services.auth.authenticate(made.key)).rejects.toMatchObject({ code: 'unauthorized' });
  });

  it('a revocation heard while a lookup is in flight is not undone by that lookup’s late answer', async () => {
    const made = await t.core.services.auth.createKey(t.admin, { role: 'member', label: 'raced' });
    // A replica of its own (its own cache), on the same ledger: the cache is driven by hand below.
    const keys = new KeyCache();
    const auth = authService(t.core.internals.deps, {}, keys);
    const hash = hashKey(made.key);
    // The lookup starts: its ledger read is in flight...
    const lookup = auth.authenticate(made.key);
    // ...when the revocation's NOTIFY is heard. What the cache sees is what a real race gives it (the read
    // saw the row before the revoking commit, the NOTIFY came before the answer): an eviction between the
    // lookup's begin and its set. The commit itself is written after the read answered, so the read
    // answers "valid" on PGlite and on PostgreSQL alike.
    keys.evict(hash);
    expect((await lookup).keyId).toBe(made.id); // it answered what it read...
    await sql`UPDATE api_keys SET revoked_at = now() WHERE id = ${made.id}`.execute(t.core.internals.deps.db);
    expect(keys.get(hash)).toBeUndefined(); // ...but did not remember it,
    // so the next request asks the ledger and is refused.
    await expect(auth.authenticate(made.key)).rejects.toMatchObject({ code: 'unauthorized' });
  });

  it('requests that miss together share one key read (no stampede when a key expires under load)', async () => {
    const made = await t.core.services.auth.createKey(t.admin, { role: 'member', label: 'shared' });
    // The core's own ledger, observed: each query that reads api_keys is counted.
    let keyReads = 0;
    const counted = t.core.internals.deps.db.withPlugin({
      transformQuery: (args) => {
        const from = (args.node as { from?: { froms?: { table?: { identifier?: { name?: string } } }[] } })
          .from;
        if (from?.froms?.some((f) => f.table?.identifier?.name === 'api_keys')) keyReads += 1;
        return args.node;
      },
      transformResult: async (args) => args.result,
    });
    const auth = authService({ ...t.core.internals.deps, db: counted }, {}, new KeyCache());
    const principals = await Promise.all(Array.from({ length: 16 }, () => auth.authenticate(made.key)));
    expect(new Set(principals.map((p) => p.keyId))).toEqual(new Set([made.id]));
    expect(keyReads).toBe(1);
    // An unknown key is shared while in flight too, and refused to every request that waited on it.
    const refused = await Promise.allSettled(
      Array.from({ length: 4 }, () => auth.authenticate('evk_test_unknown_shared_00000000001')),
    );
    expect(
      refused.map((r) => (r.status === 'rejected' ? (r.reason as { code?: string }).code : r.status)),
    ).toEqual(Array(4).fill('unauthorized'));
    expect(keyReads).toBe(2);
  });

  it('an unknown key is never remembered: once inserted, it is accepted', async () => {
    const raw = 'evk_test_not_yet_inserted_0000000001';
    await expect(t.core.services.auth.authenticate(raw)).rejects.toMatchObject({ code: 'unauthorized' });
    await sql`INSERT INTO api_keys (id, tenant_id, key_hash, role, label, created_at)
              VALUES ('key_late', 'default', ${hashKey(raw)}, 'member', 'late', now())`.execute(
      t.core.internals.deps.db,
    );
    expect((await t.core.services.auth.authenticate(raw)).keyId).toBe('key_late');
  });
});
