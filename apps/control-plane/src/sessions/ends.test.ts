// How a session ends, on real bubblewrap sandboxes with the sweep driven by hand and a movable clock: idle is
// counted from exec and terminal traffic only (a touch extends the expiry, never the idle deadline); a close
// after the deadline (before the sweep) settles with the deadline's reason, once; a terminal ticket is not
// redeemed on a run a cancel has settled; a session swept late is charged up to its deadline, not the sweep. And a session gives only the channels it was opened with (`attach`).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Json, type SessionTestApp, sessionTestApp } from '../../test/sessions.js';
import { isControlPlaneError } from '../errors.js';
import { call } from '../http/testing/harness.js';
import type { SessionService } from './service.js';

let t: SessionTestApp;
let key: string;
let service: SessionService;
beforeAll(async () => {
  t = await sessionTestApp({ sweep: false });
  key = await t.tenant('ends');
  service = t.core.sessions?.service as SessionService;
}, 240_000);
afterAll(async () => {
  await t?.close();
});

const api = async (method: string, p: string, body?: unknown) => {
  const r = await call(t.app, method, p, { key, ...(body === undefined ? {} : { body }) });
  return { status: r.status, body: r.body as Json };
};
const sweep = () => (t.core.sessions as { reaper: { sweep(): Promise<string[]> } }).reaper.sweep();
const run = async (id: string) => (await api('GET', `/runs/${id}`)).body as Json;

async function open(idleTimeoutSec: number): Promise<string> {
  const r = await api('POST', '/sandboxes', { ttlSec: 3600, idleTimeoutSec });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return (r.body.run as { id: string }).id;
}

describe('how sessions end', () => {
  it('a touch extends the expiry but is no traffic: the idle deadline stays and the sweep settles it idle', async () => {
    const id = await open(10);
    const before = (await api('GET', `/sandboxes/${id}`)).body as Json;
    t.advance(6_000);
    const touched = await api('POST', `/sandboxes/${id}/touch`, { ttlSec: 7200 });
    expect(touched.status, JSON.stringify(touched.body)).toBe(200);
    expect(Date.parse(touched.body.expiresAt)).toBeGreaterThan(Date.parse(before.expiresAt));
    expect(touched.body.idleDeadline).toBe(before.idleDeadline);
    expect(touched.body.lastActivityAt).toBe(before.lastActivityAt);
    t.advance(5_000); // 11 s without exec or terminal traffic
    expect(await sweep()).toContain(id);
    expect(await run(id)).toMatchObject({ status: 'succeeded', outputs: { result: { endReason: 'idle' } } });
  }, 60_000);

  it('a close after the idle deadline, before the sweep, settles it idle, once', async () => {
    const id = await open(5);
    t.advance(6_000);
    const closed = await api('POST', `/sandboxes/${id}/close`);
    expect(closed.status, JSON.stringify(closed.body)).toBe(200);
    expect(closed.body).toMatchObject({ status: 'succeeded', outputs: { result: { endReason: 'idle' } } });
    expect(await sweep()).not.toContain(id); // nothing left for the reaper
    expect((await api('POST', `/sandboxes/${id}/close`)).status).toBe(409);
    const fresh = await open(600); // a close within the deadlines is `closed`
    expect((await api('POST', `/sandboxes/${fresh}/close`)).body.outputs.result.endReason).toBe('closed');
  }, 60_000);

  it('a ticket redeemed on a parked session is 409 session_parked, on a closed one 409 session_ended; unspent', async () => {
    const id = await open(600);
    const ticket = async () => {
      const minted = await api('POST', `/runs/${id}/terminal-ticket`);
      expect(minted.status, JSON.stringify(minted.body)).toBe(201);
      return minted.body.ticket as string;
    };
    const refusal = (ticket: string) =>
      service.redeemTerminal(id, ticket).then(
        () => null,
        (e: unknown) => (isControlPlaneError(e) ? { status: e.httpStatus, reason: e.details.reason } : e),
      );
    const beforePark = await ticket();
    expect((await api('POST', `/sandboxes/${id}/suspend`)).status).toBe(200);
    expect(await refusal(beforePark)).toEqual({ status: 409, reason: 'session_parked' });
    expect((await api('POST', `/sandboxes/${id}/resume`, {})).status).toBe(200);
    const beforeClose = await ticket();
    expect((await api('POST', `/sandboxes/${id}/close`)).status).toBe(200);
    expect(await refusal(beforeClose)).toEqual({ status: 409, reason: 'session_ended' });
    const unspent = await t.core.internals.deps.db
      .selectFrom('terminal_tickets')
      .select('redeemed_at')
      .where('run_id', '=', id)
      .execute();
    expect(unspent.map((r) => r.redeemed_at)).toEqual([null, null]);
  }, 60_000);

  it('a ticket minted before a cancel is refused 409 session_ended after it, and is not spent', async () => {
    const id = await open(600);
    const minted = await api('POST', `/runs/${id}/terminal-ticket`);
    expect(minted.status, JSON.stringify(minted.body)).toBe(201);
    const cancelled = await api('POST', `/runs/${id}/cancel`, {});
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    expect((await run(id)).status).toBe('cancelled');
    const refused = await service.redeemTerminal(id, minted.body.ticket as string).then(
      () => null,
      (e: unknown) => e,
    );
    expect(isControlPlaneError(refused) && refused.httpStatus).toBe(409);
    expect(isControlPlaneError(refused) && refused.details.reason).toBe('session_ended');
    const spent = await t.core.internals.deps.db
      .selectFrom('terminal_tickets')
      .select('redeemed_at')
      .where('run_id', '=', id)
      .executeTakeFirstOrThrow();
    expect(spent.redeemed_at).toBeNull();
    expect(await sweep()).toContain(id); // the reaper disposes the cancelled session's compute
  }, 60_000);

  it('a session gives only the channels it was opened with: 409 channel_not_attached, nothing changed', async () => {
    const opened = async (attach?: string[]) => {
      const r = await api('POST', '/sandboxes', {
        ttlSec: 600,
        idleTimeoutSec: 600,
        ...(attach ? { attach } : {}),
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return r.body.run as Json;
    };
    const execOnly = await opened(['exec']);
    const ticket = await api('POST', `/runs/${execOnly.id}/terminal-ticket`);
    expect(ticket.status, JSON.stringify(ticket.body)).toBe(409);
    expect(ticket.body.details).toMatchObject({ reason: 'channel_not_attached', channel: 'terminal' });
    expect((await api('POST', `/sandboxes/${execOnly.id}/exec`, { command: ['true'] })).body.exitCode).toBe(
      0,
    );

    const terminalOnly = await opened(['terminal']);
    const activity = async () => {
      const v = (await api('GET', `/sandboxes/${terminalOnly.id}`)).body;
      return [v.state, v.lastActivityAt, v.idleDeadline, v.expiresAt];
    };
    const before = await activity();
    const exec = await api('POST', `/sandboxes/${terminalOnly.id}/exec`, { command: ['true'] });
    expect(exec.status, JSON.stringify(exec.body)).toBe(409);
    expect(exec.body.details).toMatchObject({ reason: 'channel_not_attached', channel: 'exec' });
    expect(await activity()).toEqual(before);
    expect((await api('POST', `/runs/${terminalOnly.id}/terminal-ticket`)).status).toBe(201);

    // Named by neither door: exec and the terminal, as the run's row says.
    expect((await opened()).attach).toEqual(['exec', 'terminal']);
    const viaRuns = await api('POST', '/runs', {
      kind: 'sandbox',
      subject: { image: 'default' },
      lifetime: 'session',
      ttlSec: 600,
    });
    expect(viaRuns.status, JSON.stringify(viaRuns.body)).toBe(201);
    const id = (viaRuns.body.run as Json).id as string;
    expect((viaRuns.body.run as Json).attach).toEqual(['exec', 'terminal']);
    expect((await api('POST', `/sandboxes/${id}/exec`, { command: ['true'] })).body.exitCode).toBe(0);
    for (const r of [execOnly.id, terminalOnly.id, id]) await api('POST', `/sandboxes/${r}/close`);
  }, 60_000);

  it('a session the sweep reaches late is charged up to its idle deadline, not up to the sweep', async () => {
    const priced = await t.tenant('endspriced', { sessionUsdPerHour: 3600, budget: { usd: 10_000 } });
    const opened = await call(t.app, 'POST', '/sandboxes', {
      key: priced,
      body: { ttlSec: 3600, idleTimeoutSec: 5 },
    });
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    const id = (opened.body.run as Json).id as string;
    t.advance(60_000); // the sweep comes 55 s after the idle deadline
    expect(await sweep()).toContain(id);
    const settled = (await call(t.app, 'GET', `/runs/${id}`, { key: priced })).body as Json;
    expect(settled.outputs.result.endReason).toBe('idle');
    expect(settled.usage.costUsd).toBeCloseTo(5, 3); // 5 s open at $1/s
  }, 60_000);
});
