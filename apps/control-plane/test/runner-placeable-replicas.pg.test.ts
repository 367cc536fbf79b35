// Positive placement answers (runners/registry.ts PlaceableCache, ≤ 5 s per replica) on two real cores
// sharing one live PostgreSQL: a drain or a revoke on replica A clears replica B's remembered positives at
// the commit, through the `everdict_runners` NOTIFY (its payload is the runner's credential hash, not '*').
// Observed through B's cache itself, not through its TTL: without the NOTIFY's clear the positive would stay
// held and the wait below would time out. Runs only with EVERDICT_TEST_DATABASE_URL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Core, startCore } from '../src/core.js';
import { pairingProof } from '../src/http/testing/runners.js';
import { placeableCache } from '../src/runners/placeable.js';
import { eventually } from './core.js';
import { announceSkippedLiveSuite, createLiveDatabase, LIVE_PG } from './db.js';

announceSkippedLiveSuite('test/runner-placeable-replicas.pg.test.ts');
const KEY = 'evk_placeable_replicas_test_key_000';
const CAPS = { drivers: ['process'], kinds: ['command'], images: ['default'], slots: 2 };

describe.runIf(LIVE_PG)('placement answers on two replicas', { timeout: 120_000 }, () => {
  let live: Awaited<ReturnType<typeof createLiveDatabase>>;
  let a: Core;
  let b: Core;

  beforeAll(async () => {
    live = await createLiveDatabase();
    const opts = (replicaId: string) => ({
      databaseUrl: live.url,
      bootstrapKey: KEY,
      executors: [],
      scheduler: { enabled: false, pollMs: 50, replicaId },
    });
    a = await startCore(opts('a'));
    b = await startCore(opts('b'));
  }, 120_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await live?.drop();
  });

  it('a drain and a revoke on A clear B’s remembered positives; after each B refuses', async () => {
    const admin = await a.services.auth.authenticate(KEY);
    const onB = () =>
      b.services.runs.create(admin, { kind: 'command', subject: { command: ['true'] } }).then(
        () => 'created',
        (e: { code?: string }) => e.code,
      );
    const pair = async (name: string) => {
      const { token } = await a.services.runners!.mintPairingToken(admin, { name });
      return a.services.runners!.pair({
        token,
        ...pairingProof(token),
        name,
        capabilities: CAPS,
      });
    };
    const cacheB = placeableCache(b.internals.deps);
    const drained = await pair('drained');
    expect(await onB()).toBe('created');
    expect(cacheB.size).toBe(1);
    await a.services.runners!.drain(admin, drained.runnerId);
    await eventually(async () => (cacheB.size === 0 ? true : undefined));
    expect(await onB()).toBe('no_placement'); // a draining runner leaves the placement index
    const revoked = await pair('revoked');
    expect(await onB()).toBe('created');
    expect(cacheB.size).toBe(1);
    await a.services.runners!.revoke(admin, revoked.runnerId);
    await eventually(async () => (cacheB.size === 0 ? true : undefined));
    expect(await onB()).toBe('no_placement');
  });
});
