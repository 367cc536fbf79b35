// The durable runner check applies where triggers create runs too: a subscription whose command runs were
// placeable when it was made, firing after its only runner was revoked, records `refused:no_placement` —
// nothing queued that no runner could ever take.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, type TestCore, testCore } from '../../test/core.js';
import { pairingProof } from '../http/testing/runners.js';

let t: TestCore;
beforeAll(async () => {
  t = await testCore({ executors: [] });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

describe('subscription firings and runner placement', () => {
  it('a firing after the last capable runner is revoked is a recorded refusal, no run created', async () => {
    const { services, internals } = t.core;
    const db = internals.deps.db;
    const { token } = await services.runners!.mintPairingToken(t.admin, { name: 'only' });
    const { runnerId } = await services.runners!.pair({
      token,
      ...pairingProof(token),
      name: 'only',
      capabilities: { drivers: ['process'], kinds: ['command'], images: ['default'], slots: 1 },
    });
    const sub = await services.subscriptions.create(t.admin, {
      name: 'command after analysis',
      selector: { kind: 'run.queued', filter: { kind: 'analysis' } },
      runSpec: { kind: 'command', subject: { command: ['true'] } },
    });
    // Placeable now: a firing creates its run.
    await services.runs.create(t.admin, { kind: 'analysis', subject: { config: { fn: 'echo' } } });
    await eventually(async () => {
      const rows = await db
        .selectFrom('subscription_firings')
        .select('outcome')
        .where('subscription_id', '=', sub.id)
        .execute();
      return rows.some((r) => r.outcome === 'created') ? true : undefined;
    }, 30_000);

    await services.runners!.revoke(t.admin, runnerId);
    const commandsBefore = (await services.runs.list(t.admin, { kind: 'command' })).items.length;
    const { run: cause } = await services.runs.create(t.admin, {
      kind: 'analysis',
      subject: { config: { fn: 'echo' } },
    });
    const refused = await eventually(async () => {
      const rows = await db
        .selectFrom('subscription_firings')
        .select(['outcome', 'run_id', 'event_id'])
        .where('subscription_id', '=', sub.id)
        .where('outcome', 'like', 'refused:%')
        .execute();
      return rows.length > 0 ? rows : undefined;
    }, 30_000);
    expect(refused.map((r) => r.outcome)).toEqual(['refused:no_placement:']);
    expect(refused[0]?.run_id).toBeNull();
    expect((await services.runs.list(t.admin, { kind: 'command' })).items.length).toBe(commandsBefore);
    expect((await services.runs.list(t.admin, { causedBy: cause.id })).items).toEqual([]);
  }, 120_000);
});
