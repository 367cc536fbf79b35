// A stored subscription whose run spec no longer parses (written by an older version) is skipped with a
// recorded refusal; the consumer's cursor moves on and every other tenant's subscriptions still fire.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, type TestCore, testCore } from '../../test/core.js';
import { json } from '../db/numeric.js';

let t: TestCore;
beforeAll(async () => {
  t = await testCore();
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const cmd = { kind: 'command', subject: { path: 'x', image: 'alpine:3.20', command: ['true'] } };

describe('subscriptions consumer', () => {
  it('skips a spec that no longer parses with a recorded refusal, and never stalls for other tenants', async () => {
    const { services, internals } = t.core;
    const db = internals.deps.db;
    const acme = await services.auth.createTenant(t.admin, { id: 'acme' });
    const acmeAdmin = await services.auth.authenticate(acme.key.key);
    const good = await services.subscriptions.create(t.admin, {
      name: 'on command',
      selector: { kind: 'run.queued', filter: { kind: 'command' } },
      runSpec: { kind: 'analysis', subject: { config: { fn: 'echo' } } },
    });
    // Written directly, as an older version might have: no kind the run schema knows.
    for (const [id, tenant] of [
      ['sub_legacy_acme', 'acme'],
      ['sub_legacy_default', 'default'],
    ] as const) {
      await db
        .insertInto('subscriptions')
        .values({
          id,
          tenant_id: tenant,
          name: 'legacy',
          selector_kind: 'run.queued',
          selector_filter: json({}),
          schedule_cron: null,
          schedule_tz: null,
          run_spec: json({ kind: 42, subject: 'not an object' }),
          cooldown_sec: 0,
          max_depth: 3,
          enabled: true,
          enabled_at: new Date(),
          last_fired_at: null,
          created_by: 'key_legacy',
          created_at: new Date(),
          deleted_at: null,
        })
        .execute();
    }
    const { run: theirs } = await services.runs.create(acmeAdmin, cmd);
    const { run: ours } = await services.runs.create(t.admin, cmd);
    const outcomes = await eventually(async () => {
      const rows = await db
        .selectFrom('subscription_firings')
        .select(['subscription_id', 'outcome', 'run_id'])
        .execute();
      const by = (id: string) => rows.filter((r) => r.subscription_id === id).map((r) => r.outcome);
      const created = by(good.id).includes('created');
      return created && by('sub_legacy_acme').length > 0 && by('sub_legacy_default').length > 0
        ? { good: by(good.id), acme: by('sub_legacy_acme'), default: by('sub_legacy_default') }
        : undefined;
    }, 30_000);
    expect(outcomes.good).toEqual(['created']);
    expect(outcomes.acme.every((o) => o === 'refused:invalid_spec')).toBe(true);
    expect(outcomes.default.every((o) => o === 'refused:invalid_spec')).toBe(true);
    const followUp = await services.runs.list(t.admin, { causedBy: ours.id });
    expect(followUp.items.map((r) => r.origin.subscriptionId)).toEqual([good.id]);
    expect((await services.runs.list(acmeAdmin, { causedBy: theirs.id })).items).toEqual([]);
  }, 60_000);
});
