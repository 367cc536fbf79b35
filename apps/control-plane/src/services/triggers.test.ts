import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, type TestCore, testCore } from '../../test/core.js';
import { tickSchedules } from '../scheduler/schedule-ticker.js';

let t: TestCore;
beforeAll(async () => {
  t = await testCore();
});
afterAll(async () => {
  await t.close();
});

describe('subscriptions and schedules', () => {
  it('turns a failed run into a follow-up run stamped with its cause, and stops a self-causing loop', async () => {
    const sub = await t.core.services.subscriptions.create(t.admin, {
      name: 'on failure',
      selector: { kind: 'run.settled', filter: { outcome: 'failed' } },
      runSpec: { kind: 'analysis', subject: { config: { fn: 'fail', code: 'again' } } },
      maxDepth: 5,
    });
    const { run } = await t.core.services.runs.create(t.admin, {
      kind: 'analysis',
      subject: { config: { fn: 'fail' } },
    });
    const follow = await eventually(async () => {
      const l = await t.core.services.runs.list(t.admin, { causedBy: run.id });
      return l.items[0];
    });
    expect(follow.origin).toMatchObject({
      cause: 'event',
      eventKind: 'run.settled',
      causedByRunId: run.id,
      subscriptionId: sub.id,
    });
    expect(follow.causalDepth).toBe(1);
    await eventually(async () =>
      (await t.core.services.runs.get(t.admin, follow.id)).status === 'failed' ? true : undefined,
    );
    // The follow-up failed too, but it was created by this subscription: the consumer records the refusal
    // (self_cause) for its settle event, and no third run exists.
    await eventually(async () => {
      const refused = await t.core.internals.deps.db
        .selectFrom('subscription_firings')
        .select('outcome')
        .where('subscription_id', '=', sub.id)
        .where('outcome', '=', 'refused:self_cause')
        .executeTakeFirst();
      return refused ?? undefined;
    });
    expect((await t.core.services.runs.list(t.admin, { causedBy: follow.id })).items).toHaveLength(0);
    await t.core.services.subscriptions.setEnabled(t.admin, sub.id, false);
  });

  it("says when a schedule fires next, in its time zone's reading; nothing for an event trigger or a disabled one", async () => {
    const before = Date.now();
    const sub = await t.core.services.subscriptions.create(t.admin, {
      name: 'tokyo 03:30',
      schedule: { cron: '30 3 * * *', timezone: 'Asia/Tokyo' },
      runSpec: { kind: 'analysis', subject: { config: { fn: 'count_runs' } } },
    });
    // 03:30 in Tokyo (UTC+9, no daylight saving) is 18:30 UTC, within the coming day.
    const next = Date.parse(sub.nextFireAt ?? '');
    expect(new Date(next).toISOString()).toMatch(/T18:30:00\.000Z$/);
    expect(next).toBeGreaterThan(before);
    expect(next - before).toBeLessThanOrEqual(24 * 3600_000);
    expect((await t.core.services.subscriptions.get(t.admin, sub.id)).nextFireAt).toBe(sub.nextFireAt);
    expect((await t.core.services.subscriptions.setEnabled(t.admin, sub.id, false)).nextFireAt).toBeNull();
    const listed = (await t.core.services.subscriptions.list(t.admin)).find((s) => s.id === sub.id);
    expect(listed?.nextFireAt).toBeNull();
    const onEvent = await t.core.services.subscriptions.create(t.admin, {
      name: 'on settle',
      selector: { kind: 'run.settled', filter: {} },
      runSpec: { kind: 'analysis', subject: { config: { fn: 'count_runs' } } },
      enabled: false,
    });
    expect(onEvent.nextFireAt).toBeNull();
  });

  it('fires a schedule once per slot and creates a schedule-caused run', async () => {
    const sub = await t.core.services.subscriptions.create(t.admin, {
      name: 'every minute',
      schedule: { cron: '* * * * *' },
      runSpec: { kind: 'analysis', subject: { config: { fn: 'count_runs' } } },
    });
    const deps = t.core.internals.deps;
    const later = { ...deps, clock: () => new Date(Date.now() + 61_000) };
    const fired = (await tickSchedules(later)) + (await tickSchedules(later));
    expect(fired).toBe(1);
    t.core.internals.dispatch?.wake();
    const run = await eventually(async () =>
      (await t.core.services.runs.list(t.admin, { kind: 'analysis' })).items.find(
        (r) => r.origin.scheduleId === sub.id,
      ),
    );
    expect(run.origin).toMatchObject({ cause: 'schedule', eventKind: 'schedule.fired' });
  });
});

describe('agent bridge', () => {
  it('records started → awaiting_input → resumed → succeeded as a verified chain with idle energy', async () => {
    const b = t.core.services.agentBridge;
    const started = await b.report(t.admin, {
      event: 'started',
      cause: 'chat',
      agent: { agentId: 'helper', permissionMode: 'ask' },
    });
    expect(started).toMatchObject({ kind: 'agent', status: 'running', class: 'interactive' });
    const transcript = 'ab'.repeat(32);
    await b.report(t.admin, { runId: started.id, event: 'awaiting_input', transcript });
    await new Promise((r) => setTimeout(r, 5));
    await b.report(t.admin, { runId: started.id, event: 'resumed', transcript });
    const done = await b.report(t.admin, {
      runId: started.id,
      event: 'succeeded',
      outputs: { summary: 'done' },
      usage: { costUsd: 0.01 },
    });
    expect(done.status).toBe('succeeded');
    const rec = await t.core.services.runs.record(t.admin, started.id);
    expect(rec.verify).toMatchObject({ ok: true, length: 5, phase: 'closed' });
    expect(BigInt(rec.verify.idleUj ?? '0')).toBeGreaterThan(0n);
    const kinds = (rec.wire as { segments: { kind: string }[] }).segments.map((s) => s.kind);
    expect(kinds).toEqual(['executed', 'suspended', 'resumed', 'executed', 'closed']);
  });
});

describe('auth', () => {
  it('keeps only hashes, shows a key once, enforces roles and revocation', async () => {
    const member = await t.core.services.auth.createKey(t.admin, { role: 'member', label: 'ci' });
    const p = await t.core.services.auth.authenticate(member.key);
    expect(p).toMatchObject({ role: 'member', tenantId: 'default' });
    const stored = await t.core.internals.deps.db
      .selectFrom('api_keys')
      .select('key_hash')
      .where('id', '=', member.id)
      .executeTakeFirstOrThrow();
    expect(stored.key_hash).not.toContain(member.key);
    await expect(t.core.services.auth.createKey(p, {})).rejects.toMatchObject({ httpStatus: 403 });
    expect((await t.core.services.auth.listKeys(t.admin)).some((k) => 'key' in k)).toBe(false);
    await t.core.services.auth.revokeKey(t.admin, member.id);
    await expect(t.core.services.auth.authenticate(member.key)).rejects.toMatchObject({ httpStatus: 401 });
  });
});
