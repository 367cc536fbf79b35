// The cached runner credential check: a paired runner's calls ask the ledger once; a revocation is refused
// at once on the revoking core and, by NOTIFY, on a core that did not revoke it; a drain is seen the same
// way; unknown credentials are never remembered; a lookup that raced an eviction is not remembered.
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, type TestCore, testCore } from '../../test/core.js';
import { pairingProof } from '../http/testing/runners.js';
import { placeableCache } from '../runners/placeable.js';
import type { RunnerService } from '../runners/service.js';
import { RUNNERS_CHANNEL, RunnerCredentials } from './runner-credentials.js';

const CAPS = { drivers: ['process'], kinds: ['command'], images: ['default'], slots: 2 };
const runner = {
  id: 'rnr_x',
  tenantId: null,
  name: 'x',
  publicKey: 'ab'.repeat(32),
  capabilities: CAPS as never,
  state: 'active' as const,
};

describe('RunnerCredentials', () => {
  it('forgets an entry after its lifetime, on eviction, and everything on "*"', () => {
    let t = 0;
    const cache = new RunnerCredentials(() => t, 100);
    cache.set('a', runner, cache.begin());
    cache.set('b', runner, cache.begin());
    expect(cache.get('a')).toEqual(runner);
    t = 100;
    expect(cache.get('a')).toBeUndefined();
    cache.set('a', runner, cache.begin());
    cache.evict('a');
    expect(cache.get('a')).toBeUndefined();
    cache.set('a', runner, cache.begin());
    cache.evict('*');
    expect(cache.get('b')).toBeUndefined();
  });

  it('does not remember a lookup begun before an eviction, nor a revoked runner', () => {
    const cache = new RunnerCredentials();
    const g = cache.begin();
    cache.evict('other'); // a revocation committed while the lookup read the row
    cache.set('a', runner, g);
    expect(cache.get('a')).toBeUndefined();
    cache.set('a', { ...runner, state: 'revoked' }, cache.begin());
    expect(cache.get('a')).toBeUndefined();
  });
});

describe('runner authentication with the credential cache (PGlite core)', () => {
  let t: TestCore;
  let svc: RunnerService;
  beforeAll(async () => {
    t = await testCore({ scheduler: { enabled: false } });
    svc = t.core.services.runners!;
  });
  afterAll(() => t.close());

  const paired = async (name: string) => {
    const { token } = await svc.mintPairingToken(t.admin, { name });
    return svc.pair({ token, ...pairingProof(token), name, capabilities: CAPS });
  };
  const hashOf = (credential: string) => createHash('sha256').update(credential, 'utf8').digest('hex');
  const codeOf = (credential: string) =>
    svc.authenticate(credential).then(
      () => undefined,
      (e: { code?: string }) => e.code,
    );

  it('a paired runner costs no lookup on its next calls; another replica’s revocation NOTIFY ends that', async () => {
    const { runnerId, credential } = await paired('cached');
    const first = await svc.authenticate(credential);
    expect(first.id).toBe(runnerId);
    // Revoked behind the core's back (no NOTIFY): the remembered runner still answers...
    await sql`UPDATE runners SET state = 'revoked' WHERE id = ${runnerId}`.execute(t.core.internals.deps.db);
    expect(await svc.authenticate(credential)).toEqual(first);
    // ...until the NOTIFY another replica's revoke sends at its commit arrives.
    await t.core.internals.ldb.notify(RUNNERS_CHANNEL, hashOf(credential));
    await eventually(() => codeOf(credential));
    await expect(svc.authenticate(credential)).rejects.toMatchObject({ code: 'invalid_runner_credential' });
  });

  it('revoke refuses the credential at once on the revoking core (the next call is 401)', async () => {
    const { runnerId, credential } = await paired('revoked');
    await svc.authenticate(credential);
    await svc.revoke(t.admin, runnerId);
    await expect(svc.authenticate(credential)).rejects.toMatchObject({ code: 'invalid_runner_credential' });
  });

  it('a drain is seen at once on the draining core (the identity says draining)', async () => {
    const { runnerId, credential } = await paired('drained');
    expect((await svc.authenticate(credential)).state).toBe('active');
    await svc.drain(t.admin, runnerId);
    expect((await svc.authenticate(credential)).state).toBe('draining');
  });

  it('revoke and drain send the NOTIFY in their transaction (another replica hears them)', async () => {
    const heard: string[] = [];
    const unlisten = await t.core.internals.ldb.listen(RUNNERS_CHANNEL, (h) => heard.push(h));
    try {
      const a = await paired('heard-drain');
      const b = await paired('heard-revoke');
      await svc.drain(t.admin, a.runnerId);
      await svc.revoke(t.admin, b.runnerId);
      // Only this test's runners: on a server an earlier test's NOTIFY can still be on its way to the listener.
      const ours = [hashOf(a.credential), hashOf(b.credential)];
      const heardOurs = () => heard.filter((h) => ours.includes(h));
      await eventually(async () => (heardOurs().length >= 2 ? true : undefined));
      expect(heardOurs()).toEqual(ours);
    } finally {
      await unlisten();
    }
  });

  it('an unknown credential is never remembered', async () => {
    await expect(svc.authenticate('evr_not_a_credential')).rejects.toMatchObject({
      code: 'invalid_runner_credential',
    });
  });
});

describe('placement answers remembered per replica (PGlite core)', () => {
  let t: TestCore;
  let svc: RunnerService;
  beforeAll(async () => {
    t = await testCore({ scheduler: { enabled: false }, executors: [] });
    svc = t.core.services.runners!;
  });
  afterAll(() => t.close());

  const command = () =>
    t.core.services.runs.create(t.admin, { kind: 'command', subject: { command: ['true'] } }).then(
      () => 'created',
      (e: { code?: string }) => e.code,
    );
  const pairOne = async (name: string) => {
    const { token } = await svc.mintPairingToken(t.admin, { name });
    return svc.pair({ token, ...pairingProof(token), name, capabilities: CAPS });
  };

  it('a refusal is never remembered; a revoke here refuses at once; another replica’s NOTIFY clears', async () => {
    expect(await command()).toBe('no_placement');
    const a = await pairOne('placing');
    expect(await command()).toBe('created'); // the negative was not kept
    await svc.revoke(t.admin, a.runnerId);
    expect(await command()).toBe('no_placement'); // cleared on the revoking core
    const b = await pairOne('placing-2');
    expect(await command()).toBe('created');
    // Removed behind the core's back (what another replica's revoke commits): remembered until its NOTIFY.
    await sql`DELETE FROM runner_images WHERE runner_id = ${b.runnerId}`.execute(t.core.internals.deps.db);
    expect(await command()).toBe('created');
    await t.core.internals.ldb.notify(RUNNERS_CHANNEL, '*');
    await eventually(async () => ((await command()) === 'no_placement' ? true : undefined));
  });

  it('the NOTIFY a drain or a revoke sends (a credential hash) clears every remembered positive', async () => {
    const cache = placeableCache(t.core.internals.deps);
    for (const change of ['drain', 'revoke'] as const) {
      const r = await pairOne(`placing-${change}`);
      expect(await command()).toBe('created');
      expect(cache.size).toBe(1); // the positive is remembered
      // drain clears nothing itself: the positive goes only when this core hears its own NOTIFY, as every
      // other replica does (a revoke clears here at once as well, and its NOTIFY clears the others).
      if (change === 'drain') await svc.drain(t.admin, r.runnerId);
      else await svc.revoke(t.admin, r.runnerId);
      await eventually(async () => (cache.size === 0 ? true : undefined));
    }
  });
});
