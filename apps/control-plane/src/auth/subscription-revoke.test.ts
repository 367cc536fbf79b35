// A subscription acts with the authority of the API key that created it. Revoking that key disables it in the
// revoking transaction: it fires no more, GET says why (`disabledReason: key_revoked`), it cannot be enabled
// again (409, nothing written), and the other keys' subscriptions fire on. One whose key was revoked before the
// rule existed (enabled in the ledger) is refused at its firing, recorded as `refused:key_revoked`.
// Real core (PGlite); the consumer is driven by hand (`consumeOnce`), not by a timer.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMAND_SPEC, call, type TestApp, testApp } from '../http/testing/harness.js';
import { consumeOnce } from '../scheduler/subscriptions-consumer.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const onCommand = (name: string) => ({
  name,
  selector: { kind: 'run.queued', filter: { kind: 'command' } },
  runSpec: { kind: 'analysis', subject: { config: { fn: 'echo' } } },
});

/** Drain the outbox into the subscriptions (every settled event consumed). */
async function consumeAll(): Promise<void> {
  for (let i = 0; i < 100 && (await consumeOnce(t.core.internals.deps)) > 0; i++);
}

/** The outcomes recorded for `subId`, in event order. */
async function firings(subId: string): Promise<string[]> {
  const { rows } = await sql<{ outcome: string }>`SELECT outcome FROM subscription_firings
    WHERE subscription_id = ${subId} ORDER BY event_id`.execute(t.core.internals.deps.db);
  return rows.map((r) => r.outcome);
}

async function mintKey(): Promise<{ id: string; key: string }> {
  const made = await call(t.app, 'POST', '/api-keys', { body: { role: 'member', label: 'trigger owner' } });
  return { id: String(made.body.id), key: String(made.body.key) };
}

describe("a subscription and its creator key's revocation", () => {
  it('stops firing when the key is revoked, says why, and cannot be enabled again', async () => {
    const owner = await mintKey();
    const theirs = await call(t.app, 'POST', '/subscriptions', { key: owner.key, body: onCommand('owned') });
    expect(theirs.status, JSON.stringify(theirs.body)).toBe(201);
    expect(theirs.body).toMatchObject({ enabled: true, disabledReason: null, createdBy: owner.id });
    const ours = await call(t.app, 'POST', '/subscriptions', { body: onCommand('admin’s') });
    const [subId, otherId] = [String(theirs.body.id), String(ours.body.id)];

    expect((await call(t.app, 'POST', '/runs', { body: COMMAND_SPEC })).status).toBe(201);
    await consumeAll();
    expect(await firings(subId)).toEqual(['created']);
    expect(await firings(otherId)).toEqual(['created']);

    expect((await call(t.app, 'POST', `/api-keys/${owner.id}/revoke`)).status).toBe(200);
    const got = await call(t.app, 'GET', `/subscriptions/${subId}`);
    expect(got.body).toMatchObject({ enabled: false, disabledReason: 'key_revoked' });
    const listed = await call(t.app, 'GET', '/subscriptions');
    const items = listed.body.items as { id: string; disabledReason: string | null }[];
    expect(items.find((s) => s.id === subId)?.disabledReason).toBe('key_revoked');
    expect(items.find((s) => s.id === otherId)?.disabledReason).toBeNull();

    expect((await call(t.app, 'POST', '/runs', { body: COMMAND_SPEC })).status).toBe(201);
    await consumeAll();
    expect(await firings(subId)).toEqual(['created']); // no firing, not even a refusal: it is disabled
    expect(await firings(otherId)).toEqual(['created', 'created']);

    // Another admin cannot bring it back under the revoked key's authority; nothing is written.
    const before = await call(t.app, 'GET', `/subscriptions/${subId}`);
    const again = await call(t.app, 'PATCH', `/subscriptions/${subId}`, { body: { enabled: true } });
    expect([again.status, again.body.code]).toEqual([409, 'conflict']);
    expect(again.body.details).toMatchObject({ reason: 'key_revoked' });
    expect((await call(t.app, 'GET', `/subscriptions/${subId}`)).body).toEqual(before.body);
    // Disabling it stays allowed (a no-op that keeps the reason), and so does deleting it.
    const off = await call(t.app, 'PATCH', `/subscriptions/${subId}`, { body: { enabled: false } });
    expect(off.body).toMatchObject({ enabled: false, disabledReason: 'key_revoked' });
  });

  it('one whose key was revoked before the rule existed is refused at its firing, with the reason recorded', async () => {
    const owner = await mintKey();
    const made = await call(t.app, 'POST', '/subscriptions', { key: owner.key, body: onCommand('legacy') });
    const subId = String(made.body.id);
    // As an older version revoked keys: the key row alone, the subscription left enabled.
    await sql`UPDATE api_keys SET revoked_at = now() WHERE id = ${owner.id}`.execute(
      t.core.internals.deps.db,
    );
    const runsBefore = await sql<{ n: number }>`SELECT count(*)::int AS n FROM runs`.execute(
      t.core.internals.deps.db,
    );
    expect((await call(t.app, 'POST', '/runs', { body: COMMAND_SPEC })).status).toBe(201);
    await consumeAll();
    expect(await firings(subId)).toEqual(['refused:key_revoked']);
    const { rows } = await sql<{
      n: number;
    }>`SELECT count(*)::int AS n FROM runs WHERE origin->>'subscriptionId' = ${subId}`.execute(
      t.core.internals.deps.db,
    );
    expect(rows[0]?.n).toBe(0);
    expect(runsBefore.rows[0]?.n).toBeGreaterThan(0);
    expect((await call(t.app, 'GET', `/subscriptions/${subId}`)).body).toMatchObject({
      enabled: false,
      disabledReason: 'key_revoked',
    });
  });
});
