import { isTerminalStatus } from '@everdict/run-model';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { eventually, type TestCore, testCore } from '../../test/core.js';
import { ControlPlaneError } from '../errors.js';

let t: TestCore;
beforeEach(async () => {
  t = await testCore({ policy: { maxQueued: 5 } });
});
afterEach(async () => {
  await t.close();
});

const echo = (message: string) => ({ kind: 'analysis', subject: { config: { fn: 'echo', message } } });
const settled = (id: string) => async () => {
  const r = await t.core.services.runs.get(t.admin, id);
  return isTerminalStatus(r.status) ? r : undefined;
};

describe('runs: gate, dispatch, record', () => {
  it('creates an analysis run, dispatches it inline, settles it and verifies its record', async () => {
    const { run, admission } = await t.core.services.runs.create(t.admin, echo('hello'));
    expect(run.status).toBe('queued');
    expect(run.origin).toMatchObject({ cause: 'member', actor: t.admin.actor });
    expect(admission.decision).toBe('admitted');
    const done = await eventually(settled(run.id));
    expect(done.status).toBe('succeeded');
    expect(done.outputs.summary).toBe('hello');
    const rec = await t.core.services.runs.record(t.admin, run.id);
    expect(rec.verify).toMatchObject({ ok: true, length: 2, phase: 'closed' });
    const kinds = (rec.wire as { segments: { kind: string }[] }).segments.map((s) => s.kind);
    expect(kinds).toEqual(['executed', 'closed']);
    const events = await t.core.services.runs.events(t.admin, run.id);
    expect(events.items.map((e) => e.kind)).toEqual(['run.queued', 'run.started', 'run.settled']);
  });

  it('fails an analysis that throws, with the error on the run', async () => {
    const { run } = await t.core.services.runs.create(t.admin, {
      kind: 'analysis',
      subject: { config: { fn: 'fail', code: 'boom' } },
    });
    const done = await eventually(settled(run.id));
    expect(done).toMatchObject({ status: 'failed', error: { code: 'boom' } });
    expect((await t.core.services.runs.record(t.admin, run.id)).verify.ok).toBe(true);
  });

  it('gives a failed analysis run its error message as summary (text graders read it, not "missing")', async () => {
    const { run } = await t.core.services.runs.create(t.admin, {
      kind: 'analysis',
      subject: { config: { fn: 'fail', code: 'boom', message: 'disk on fire' } },
    });
    const done = await eventually(settled(run.id));
    expect(done).toMatchObject({
      status: 'failed',
      error: { code: 'boom', message: 'disk on fire' },
      outputs: { summary: 'disk on fire', exitCode: 1 },
    });
    expect((await t.core.services.runs.record(t.admin, run.id)).verify.ok).toBe(true);
  });

  it('keeps command runs queued for a driver (never executed on the host)', async () => {
    const { run } = await t.core.services.runs.create(t.admin, {
      kind: 'command',
      subject: { path: 'a.sh', image: 'alpine', command: ['sh', 'a.sh'] },
    });
    // The inline dispatcher has served the queue past it: a later analysis run settles, the command stays queued.
    const later = await t.core.services.runs.create(t.admin, echo('after'));
    await eventually(settled(later.run.id));
    expect((await t.core.services.runs.get(t.admin, run.id)).status).toBe('queued');
  });

  it('refuses with 429 queue_depth past the tenant cap, and 402 when the envelope is spent', async () => {
    const cmd = { kind: 'command', subject: { path: 'a', image: 'i', command: ['x'] } };
    for (let i = 0; i < 5; i++) await t.core.services.runs.create(t.admin, cmd);
    const refused = await t.core.services.runs.create(t.admin, cmd).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ControlPlaneError);
    expect(refused).toMatchObject({ httpStatus: 429, details: { rule: 'queue_depth' } });
    const runs = await t.core.services.runs.list(t.admin, { kind: 'command' });
    await t.core.services.runs.cancel(t.admin, runs.items[0]!.id);
    const parent = await t.core.services.runs.create(t.admin, { ...cmd, envelope: { capRuns: 1 } });
    const child = await t.core.services.runs
      .create(t.admin, cmd, { causedByRunId: parent.run.id })
      .catch((e: unknown) => e);
    expect(child).toMatchObject({ httpStatus: 402, details: { rule: 'envelope' } });
  });

  it('is idempotent by requestId', async () => {
    const a = await t.core.services.runs.create(t.admin, { ...echo('x'), requestId: 'req-1' });
    const b = await t.core.services.runs.create(t.admin, { ...echo('x'), requestId: 'req-1' });
    expect(b.run.id).toBe(a.run.id);
    expect(b.admission.decision).toBe('duplicate');
  });

  it('cancels a run and its non-terminal causal descendants', async () => {
    const cmd = { kind: 'command', subject: { path: 'a', image: 'i', command: ['x'] } };
    const root = await t.core.services.runs.create(t.admin, cmd);
    const child = await t.core.services.runs.create(t.admin, cmd, { causedByRunId: root.run.id });
    const grandchild = await t.core.services.runs.create(t.admin, cmd, { causedByRunId: child.run.id });
    const out = await t.core.services.runs.cancel(t.admin, root.run.id);
    expect(out.cancelled.sort()).toEqual([root.run.id, child.run.id, grandchild.run.id].sort());
    expect((await t.core.services.runs.get(t.admin, grandchild.run.id)).status).toBe('cancelled');
    expect(grandchild.run.causalDepth).toBe(2);
    await expect(t.core.services.runs.cancel(t.admin, root.run.id)).rejects.toMatchObject({
      httpStatus: 409,
    });
    const rec = await t.core.services.runs.record(t.admin, child.run.id);
    expect(rec.verify).toMatchObject({ ok: true, phase: 'closed' });
  });

  it('lists with filters and cursor pagination, scoped by tenant', async () => {
    for (let i = 0; i < 4; i++)
      await t.core.services.runs.create(t.admin, {
        kind: 'command',
        subject: { path: 'a', image: 'i', command: ['x'] },
      });
    const p1 = await t.core.services.runs.list(t.admin, { kind: 'command', limit: 3 });
    expect(p1.items).toHaveLength(3);
    const p2 = await t.core.services.runs.list(t.admin, {
      kind: 'command',
      limit: 3,
      cursor: p1.nextCursor!,
    });
    expect(p2.items).toHaveLength(1);
    expect(p2.nextCursor).toBeNull();
    expect(new Set([...p1.items, ...p2.items].map((r) => r.id)).size).toBe(4);
    const other = await t.core.services.auth.createTenant(t.admin, { id: 'acme' });
    const acme = await t.core.services.auth.authenticate(other.key.key);
    expect((await t.core.services.runs.list(acme, {})).items).toHaveLength(0);
    await expect(t.core.services.runs.get(acme, p1.items[0]!.id)).rejects.toMatchObject({ httpStatus: 404 });
  });
});
