// Held-open sessions under concurrent traffic, on the real core and real bubblewrap sandboxes (the reaper
// swept by hand, time moved by the core's clock): an exec running while the session is suspended answers 409
// and the park stands; a short exec ending never shortens the idle deadline a long one still running was
// given, and the last one ending counts the idle timeout from its end; past its expiry or idle deadline a session refuses touch and exec (409 session_ended) and is left
// for the reaper.
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Json, SESSION_ADMIN_KEY, type SessionTestApp, sessionTestApp } from '../../test/sessions.js';
import { call as rawCall, until } from '../http/testing/harness.js';
import { markActive } from './rows.js';

let t: SessionTestApp;
beforeAll(async () => {
  t = await sessionTestApp({ sweep: false });
}, 240_000);
afterAll(async () => {
  await t?.close();
});

const call = (method: string, path: string, body?: unknown) =>
  rawCall(t.app, method, path, { key: SESSION_ADMIN_KEY, ...(body === undefined ? {} : { body }) });

async function open(body: { ttlSec: number; idleTimeoutSec: number }): Promise<string> {
  const r = await call('POST', '/sandboxes', body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return (r.body.run as { id: string }).id;
}
const session = async (id: string) => (await call('GET', `/sandboxes/${id}`)).body as Json;
const run = async (id: string) => (await call('GET', `/runs/${id}`)).body as Json;
const sweep = async () => (await t.core.sessions?.reaper.sweep()) ?? [];

/** Whether a process `sleep <marker>` runs (the exec is inside the sandbox). */
function sleeping(marker: string): true | undefined {
  for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (argv[0]?.endsWith('sleep') && argv[1] === marker) return true;
    } catch {
      // exited meanwhile
    }
  }
  return undefined;
}

describe('held-open sessions under concurrent traffic', () => {
  it('an exec running when the session is suspended answers 409; the session stays parked and resumes', async () => {
    const id = await open({ ttlSec: 600, idleTimeoutSec: 600 });
    const marker = '5.0101';
    const running = call('POST', `/sandboxes/${id}/exec`, { command: ['sleep', marker] });
    await until('the command runs', async () => sleeping(marker));
    const parked = await call('POST', `/sandboxes/${id}/suspend`);
    expect(parked.status, JSON.stringify(parked.body)).toBe(200);

    const refused = await running;
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body.details).toMatchObject({ reason: 'session_parked' });
    expect(await session(id)).toMatchObject({ state: 'parked', status: 'awaiting_input' });
    // An exec asked of the parked session says what to do.
    const onParked = await call('POST', `/sandboxes/${id}/exec`, { command: ['true'] });
    expect(onParked.status).toBe(409);
    expect(onParked.body.detail, JSON.stringify(onParked.body)).toBe(
      `session ${id} is parked: resume it first (POST /sandboxes/${id}/resume)`,
    );
    expect((await run(id)).error ?? null).toBeNull();

    const resumed = await call('POST', `/sandboxes/${id}/resume`);
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    expect((await call('POST', `/sandboxes/${id}/exec`, { command: ['true'] })).body).toMatchObject({
      exitCode: 0,
    });
    expect((await call('POST', `/sandboxes/${id}/close`)).body).toMatchObject({ status: 'succeeded' });
  }, 60_000);

  it('a short exec ending does not shorten the idle deadline a command still running holds', async () => {
    const id = await open({ ttlSec: 600, idleTimeoutSec: 2 });
    const marker = '5.0202';
    const long = call('POST', `/sandboxes/${id}/exec`, { command: ['sleep', marker], timeoutMs: 20_000 });
    await until('the long command runs', async () => sleeping(marker));
    expect((await call('POST', `/sandboxes/${id}/exec`, { command: ['true'] })).body).toMatchObject({
      exitCode: 0,
    });
    t.advance(3_000); // past the 2 s idle timeout of the short exec's end
    expect(await sweep()).not.toContain(id);
    expect((await long).body).toMatchObject({ exitCode: 0, outcome: 'exited' });
    expect(await session(id)).toMatchObject({ state: 'open', status: 'running' });
    // The last command's end counts the idle timeout from then — not from the short one's timeout (60 s): idle
    // 3 s past it, the next sweep reaps the session.
    t.advance(1_000);
    expect(await sweep()).not.toContain(id);
    t.advance(2_000);
    expect(await sweep()).toContain(id);
    expect((await run(id)).outputs.result).toEqual({ endReason: 'idle' });
  }, 60_000);

  it('past its expiry or idle deadline a session refuses touch and exec, unchanged, until the reaper settles it', async () => {
    const expired = await open({ ttlSec: 1, idleTimeoutSec: 600 });
    const idle = await open({ ttlSec: 600, idleTimeoutSec: 1 });
    const before = { expired: await session(expired), idle: await session(idle) };
    t.advance(1_500);
    for (const [id, op, body] of [
      [expired, 'touch', { ttlSec: 600 }],
      [expired, 'exec', { command: ['true'] }],
      [idle, 'touch', { ttlSec: 600 }],
      [idle, 'exec', { command: ['true'] }],
    ] as const) {
      const r = await call('POST', `/sandboxes/${id}/${op}`, body);
      expect(r.status, `${op} ${JSON.stringify(r.body)}`).toBe(409);
      expect(r.body.details).toMatchObject({ reason: 'session_ended' });
    }
    for (const id of [expired, idle]) {
      const now = await session(id);
      const was = id === expired ? before.expired : before.idle;
      expect(now).toMatchObject({
        state: 'open',
        expiresAt: was.expiresAt,
        idleDeadline: was.idleDeadline,
        lastActivityAt: was.lastActivityAt,
      });
    }
    expect(new Set(await sweep())).toEqual(new Set([expired, idle]));
    expect((await run(expired)).outputs.result).toEqual({ endReason: 'expired' });
    expect((await run(idle)).outputs.result).toEqual({ endReason: 'idle' });
  }, 60_000);

  it('traffic on a session already past its idle deadline (terminal bytes before the sweep) does not revive it', async () => {
    const id = await open({ ttlSec: 600, idleTimeoutSec: 2 });
    const before = await session(id);
    t.advance(3_000);
    const { db, clock } = t.core.internals.deps;
    const { tenant_id } = await db
      .selectFrom('sessions')
      .select('tenant_id')
      .where('run_id', '=', id)
      .executeTakeFirstOrThrow();
    await markActive(db, tenant_id, id, clock()); // what the terminal does on its bytes
    expect(await session(id)).toMatchObject({
      state: 'open',
      idleDeadline: before.idleDeadline,
      lastActivityAt: before.lastActivityAt,
    });
    expect(await sweep()).toContain(id);
    expect((await run(id)).outputs.result).toEqual({ endReason: 'idle' });
  }, 60_000);
});
