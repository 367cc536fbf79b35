// Tenant `default` across restarts of the same database: a generated key only on the first start, an
// explicit key installed once however often it is given. PGlite on disk by default; with
// EVERDICT_TEST_DATABASE_URL, a fresh database on the live server.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLiveDatabase, LIVE_PG } from '../../test/db.js';
import { type Core, startCore } from '../core.js';
import { migrationProvider } from '../db/migrations/index.js';
import type { CoreOptions } from './index.js';

type Place = Pick<CoreOptions, 'databaseUrl' | 'dataDir'>;
const places: { place: Place; drop(): Promise<void> }[] = [];

async function freshPlace(): Promise<Place> {
  if (LIVE_PG) {
    const live = await createLiveDatabase();
    places.push({ place: { databaseUrl: live.url }, drop: live.drop });
    return { databaseUrl: live.url };
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'everdict-bootstrap-'));
  places.push({ place: { dataDir: dir }, drop: async () => rmSync(dir, { recursive: true, force: true }) });
  return { dataDir: dir };
}

async function started(place: Place, extra: Partial<CoreOptions>): Promise<Core> {
  return startCore({ ...place, scheduler: { enabled: false }, ...extra });
}

async function keyRows(core: Core) {
  return core.internals.deps.db
    .selectFrom('api_keys')
    .select(['id', 'label', 'key_hash'])
    .where('tenant_id', '=', 'default')
    .execute();
}

let place: Place;
beforeAll(async () => {
  place = await freshPlace();
});
afterAll(async () => {
  for (const p of places) await p.drop().catch(() => undefined);
});

describe('bootstrap key: first start only', () => {
  it('generates a key on the first start and none on the next; an explicit key is idempotent', async () => {
    let n = 0;
    const generate = () => `evd_generated_key_${++n}_0000000000000000`;

    const first = await started(place, { generateBootstrapKey: generate });
    expect(first.bootstrap).toEqual({
      tenantId: 'default',
      tenantCreated: true,
      keyCreated: true,
      generatedKey: 'evd_generated_key_1_0000000000000000',
    });
    // A first start applies every known migration, in name order.
    const known = Object.keys(await migrationProvider.getMigrations()).sort();
    expect(first.internals.ldb.startup?.applied).toEqual(known);
    await first.services.auth.authenticate('evd_generated_key_1_0000000000000000');
    await first.close();

    const second = await started(place, { generateBootstrapKey: generate });
    expect(second.bootstrap).toEqual({ tenantId: 'default', tenantCreated: false, keyCreated: false });
    expect(n).toBe(1); // the generator was not even called
    expect(second.internals.ldb.startup?.applied).toEqual([]); // schema already at latest: fast path
    expect(await keyRows(second)).toHaveLength(1);
    await second.close();

    const explicit = 'evk_local_quickstart_key_0001';
    const third = await started(place, { bootstrapKey: explicit });
    expect(third.bootstrap).toMatchObject({ tenantCreated: false, keyCreated: true });
    expect(third.bootstrap?.generatedKey).toBeUndefined();
    await third.close();

    const fourth = await started(place, { bootstrapKey: explicit });
    expect(fourth.bootstrap).toMatchObject({ tenantCreated: false, keyCreated: false });
    const rows = await keyRows(fourth);
    expect(rows).toHaveLength(2); // the generated one + the explicit one, once
    await fourth.services.auth.authenticate(explicit);
    await fourth.close();
  });

  it('generates again only when no active admin key is left', async () => {
    const own = await freshPlace();
    const first = await started(own, { generateBootstrapKey: () => 'evd_first_generated_00000000000' });
    const admin = await first.services.auth.authenticate('evd_first_generated_00000000000');
    const member = await first.services.auth.createKey(admin, { role: 'member', label: 'ci' });
    await first.services.auth.revokeKey(admin, admin.keyId);
    await first.close();
    const next = await started(own, { generateBootstrapKey: () => 'evd_second_generated_0000000000' });
    expect(next.bootstrap?.generatedKey).toBe('evd_second_generated_0000000000');
    await next.services.auth.authenticate(member.key); // a member key is not an admin: it stays, unchanged
    await next.close();
  });
});
