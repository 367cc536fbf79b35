// Sessions on the real core and real bubblewrap sandboxes: open through the one gate (POST /sandboxes and
// POST /runs alike), exec (a program not there: outcome not_started, 127), touch, close, caps with Retry-After, a failed provision leaving nothing, the
// reaper (TTL, idle, cancel) and the record each ending leaves; an exec whose record the store refuses answers 503.
import { TrajectoryStoreError } from '@everdict/trajectory-store';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  type Json,
  SESSION_ADMIN_KEY,
  type SessionTestApp,
  sandboxesIn,
  sandboxRuns,
  sessionTestApp,
} from '../../test/sessions.js';
import { call as rawCall, until } from '../http/testing/harness.js';

let t: SessionTestApp;
beforeAll(async () => {
  t = await sessionTestApp({ sweepMs: 200 });
}, 240_000);
afterAll(async () => {
  await t?.close();
});

const call = (method: string, path: string, body?: unknown, key: string = SESSION_ADMIN_KEY) =>
  rawCall(t.app, method, path, { key, ...(body === undefined ? {} : { body }) });

async function open(body: Record<string, unknown> = {}, key?: string) {
  const r = await call('POST', '/sandboxes', { ttlSec: 600, idleTimeoutSec: 300, ...body }, key);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return (r.body.run as { id: string }).id;
}
const run = async (id: string) => (await call('GET', `/runs/${id}`)).body as Json;

describe('sessions', () => {
  it('opens running (compute first), execs, touches, lists, and closes succeeded with endReason closed', async () => {
    const r = await call('POST', '/sandboxes', { ttlSec: 600, idleTimeoutSec: 300 });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const created = r.body.run as Json;
    expect(created).toMatchObject({
      kind: 'sandbox',
      lifetime: 'session',
      status: 'running',
      subject: { image: 'default' },
    });
    expect((r.body.admission as Record<string, unknown>).decision).toBe('admitted');
    const id = created.id as string;
    expect(sandboxesIn(t.stateDir).length).toBeGreaterThanOrEqual(1);

    const echo = await call('POST', `/sandboxes/${id}/exec`, {
      command: ['sh', '-c', 'echo hi; echo err >&2; exit 3'],
    });
    expect(echo.status, JSON.stringify(echo.body)).toBe(200);
    expect(echo.body).toMatchObject({
      exitCode: 3,
      stdout: 'hi\n',
      stderr: 'err\n',
      truncated: false,
      outcome: 'exited',
    });
    // A program that is not there is the command's own end (a shell's 127), not a 503 of the sandbox: the
    // session stays open and its next exec runs.
    const missing = await call('POST', `/sandboxes/${id}/exec`, {
      command: ['everdict-no-such-program-4711'],
    });
    expect(missing.status, JSON.stringify(missing.body)).toBe(200);
    expect(missing.body).toMatchObject({
      exitCode: 127,
      stdout: '',
      stderr: 'bwrap: execvp everdict-no-such-program-4711: No such file or directory\n',
      outcome: 'not_started',
    });
    const big = await call('POST', `/sandboxes/${id}/exec`, {
      command: ['sh', '-c', 'head -c 1100000 /dev/zero | tr "\\0" a'],
    });
    expect(big.body).toMatchObject({ exitCode: 0, truncated: true });
    expect((big.body.stdout as string).length).toBe(1024 * 1024);

    const listed = await call('GET', '/sandboxes');
    const mine = (listed.body.items as Json[]).find((s) => s.id === id);
    expect(mine).toMatchObject({ state: 'open', status: 'running', burn: { provenance: 'estimated' } });
    expect(mine?.ttlLeftSec).toBeGreaterThan(500);

    const before = Date.parse(mine?.expiresAt);
    const shorter = await call('POST', `/sandboxes/${id}/touch`, { ttlSec: 10 });
    expect(shorter.status, JSON.stringify(shorter.body)).toBe(200);
    expect(Date.parse(shorter.body.expiresAt as string)).toBe(before); // never shortens
    const longer = await call('POST', `/sandboxes/${id}/touch`, { ttlSec: 200_000 });
    const ceiling = Date.now() + 86_400_000;
    expect(Date.parse(longer.body.expiresAt as string)).toBeGreaterThan(before);
    expect(Date.parse(longer.body.expiresAt as string)).toBeLessThanOrEqual(ceiling + 5_000); // maxSessionTtlSec
    expect(Date.parse((await run(id)).expiresAt)).toBe(Date.parse(longer.body.expiresAt as string));

    const closed = await call('POST', `/sandboxes/${id}/close`);
    expect(closed.status, JSON.stringify(closed.body)).toBe(200);
    expect(closed.body).toMatchObject({ status: 'succeeded', outputs: { result: { endReason: 'closed' } } });
    const record = await call('GET', `/runs/${id}/record`);
    expect(record.body.verify).toMatchObject({ ok: true, phase: 'closed' });
    expect(JSON.stringify(record.body.wire)).toContain('completed');
    expect((await call('POST', `/sandboxes/${id}/exec`, { command: ['true'] })).status).toBe(409);
    expect((await call('GET', '/sandboxes')).body.items).not.toContainEqual(expect.objectContaining({ id }));
    // The trajectory holds the execs and is sealed.
    const traj = await until('sealed trajectory', async () =>
      (await run(id)).trajectory ? true : undefined,
    );
    expect(traj).toBe(true);
  }, 60_000);

  it('POST /runs with kind sandbox, lifetime session takes the same path', async () => {
    const r = await call('POST', '/runs', { kind: 'sandbox', subject: {}, lifetime: 'session', ttlSec: 60 });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const id = (r.body.run as { id: string }).id;
    expect((r.body.run as Record<string, unknown>).status).toBe('running');
    const e = await call('POST', `/sandboxes/${id}/exec`, { command: ['pwd'] });
    expect(e.body).toMatchObject({ exitCode: 0, stdout: '/workspace\n' });
    expect((await call('POST', `/sandboxes/${id}/close`)).status).toBe(200);
  }, 60_000);

  it('attach is not a read: a member who did not open it gets 403; its creator and an admin may', async () => {
    const owner = await t.key('member');
    const other = await t.key('member');
    const id = await open({}, owner);
    expect((await call('POST', `/sandboxes/${id}/exec`, { command: ['true'] }, other)).status).toBe(403);
    expect((await call('POST', `/runs/${id}/terminal-ticket`, undefined, other)).status).toBe(403);
    expect((await call('POST', `/sandboxes/${id}/close`, undefined, other)).status).toBe(403);
    expect((await call('POST', `/sandboxes/${id}/exec`, { command: ['true'] }, owner)).status).toBe(200);
    expect((await call('POST', `/sandboxes/${id}/close`, undefined, SESSION_ADMIN_KEY)).status).toBe(200);
  }, 60_000);

  it('a repeated attach channel is refused 400 before any compute: no sandbox brought up, no run', async () => {
    const key = await t.tenant('attach-twice', { session: { maxSessions: 1, memberReserve: 0 } });
    const sandboxes = sandboxesIn(t.stateDir).length;
    const provisions = vi.spyOn(t.driver, 'provision');
    for (const [path, body] of [
      ['/sandboxes', { ttlSec: 60, idleTimeoutSec: 60, attach: ['terminal', 'terminal'] }],
      ['/runs', { kind: 'sandbox', lifetime: 'session', attach: ['terminal', 'terminal'] }],
    ] as const) {
      const bad = await rawCall(t.app, 'POST', path, { key, body });
      expect(bad.status, JSON.stringify(bad.body)).toBe(400);
      expect(bad.type).toContain('application/problem+json');
    }
    expect(provisions).not.toHaveBeenCalled();
    provisions.mockRestore();
    expect(sandboxesIn(t.stateDir).length).toBe(sandboxes);
    expect((await rawCall(t.app, 'GET', '/runs', { key })).body.items).toEqual([]);
  });

  it('a failed provision leaves nothing: no run, no row, no slot', async () => {
    const key = await t.tenant('prov', { session: { maxSessions: 1, memberReserve: 0 } });
    const runsBefore = (await rawCall(t.app, 'GET', '/runs', { key })).body.items as unknown[];
    const bad = await rawCall(t.app, 'POST', '/sandboxes', {
      key,
      body: { image: 'no-such-image', ttlSec: 60, idleTimeoutSec: 60 },
    });
    expect(bad.status, JSON.stringify(bad.body)).toBe(422);
    expect(bad.type).toContain('application/problem+json');
    expect((await rawCall(t.app, 'GET', '/runs', { key })).body.items).toEqual(runsBefore);
    expect((await rawCall(t.app, 'GET', '/sandboxes', { key })).body.items).toEqual([]);
    // The one slot is still free.
    const ok = await rawCall(t.app, 'POST', '/sandboxes', { key, body: { ttlSec: 60, idleTimeoutSec: 60 } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    await rawCall(t.app, 'POST', `/sandboxes/${(ok.body.run as { id: string }).id}/close`, { key });
  }, 60_000);

  it('the session lane: the member reserve holds, a full pool refuses 429 with Retry-After, a close frees the slot', async () => {
    const key = await t.tenant('capped', { session: { maxSessions: 3, memberReserve: 2 } });
    const post = (body: unknown, headers?: Record<string, string>) =>
      rawCall(t.app, 'POST', '/sandboxes', { key, body, ...(headers ? { headers } : {}) });
    const caused = (by: string) =>
      rawCall(t.app, 'POST', '/runs', {
        key,
        body: { kind: 'sandbox', subject: {}, lifetime: 'session', ttlSec: 60 },
        headers: { 'x-everdict-caused-by': by },
      });
    const idOf = (r: { body: Record<string, unknown> }) => (r.body.run as { id: string }).id;
    const a = await post({ ttlSec: 120, idleTimeoutSec: 60 });
    expect(a.status).toBe(201);
    // Run-caused sessions may fill max − reserve = 1 slot; the second is refused although the pool has room.
    const x = await caused(idOf(a));
    expect(x.status, JSON.stringify(x.body)).toBe(201);
    const y = await caused(idOf(a));
    expect(y.status, JSON.stringify(y.body)).toBe(429);
    expect(JSON.stringify(y.body)).toContain('session_cap');
    // A person still gets the reserved slot; then the pool is full for everyone.
    const b = await post({ ttlSec: 120, idleTimeoutSec: 60 });
    expect(b.status, JSON.stringify(b.body)).toBe(201);
    const c = await post({ ttlSec: 120, idleTimeoutSec: 60 });
    expect(c.status, JSON.stringify(c.body)).toBe(429);
    expect(Number(c.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(c.headers.get('retry-after'))).toBeLessThanOrEqual(121);
    await rawCall(t.app, 'POST', `/sandboxes/${idOf(a)}/close`, { key });
    const d = await post({ ttlSec: 120, idleTimeoutSec: 60 });
    expect(d.status, JSON.stringify(d.body)).toBe(201);
    for (const r of [x, b, d]) await rawCall(t.app, 'POST', `/sandboxes/${idOf(r)}/close`, { key });
  }, 60_000);

  it('bad input is a typed 4xx and changes nothing', async () => {
    for (const body of [
      {},
      { ttlSec: 0, idleTimeoutSec: 1 },
      { ttlSec: 10, idleTimeoutSec: 10, extra: 1 },
      { ttlSec: 90_000, idleTimeoutSec: 10 },
    ]) {
      const r = await call('POST', '/sandboxes', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
    }
    const id = await open();
    for (const body of [{ command: [] }, { command: ['x'], timeoutMs: -1 }, {}]) {
      expect((await call('POST', `/sandboxes/${id}/exec`, body)).status).toBe(400);
    }
    expect((await call('POST', `/sandboxes/${id}/touch`, { ttlSec: -5 })).status).toBe(400);
    expect((await call('POST', '/sandboxes/run_nope/exec', { command: ['true'] })).status).toBe(404);
    expect((await call('GET', `/runs/${id}/terminal`)).status).toBe(426);
    expect((await run(id)).status).toBe('running');
    await call('POST', `/sandboxes/${id}/close`);
  }, 60_000);
});

describe('the reaper', () => {
  it('a 2 s TTL and a 1 s idle timeout are each reaped by the first sweep after their deadline', async () => {
    await t.core.sessions?.reaper.stop(); // sweeps by hand here
    try {
      const ttl = await open({ ttlSec: 2, idleTimeoutSec: 600 });
      const idle = await open({ ttlSec: 600, idleTimeoutSec: 1 });
      const deadlines = (await call('GET', '/sandboxes')).body.items as Json[];
      const ttlAt = Date.parse(deadlines.find((s) => s.id === ttl)?.expiresAt);
      const idleAt = Date.parse(deadlines.find((s) => s.id === idle)?.idleDeadline);
      // Nothing is due yet: a sweep settles neither.
      expect(await t.core.sessions?.reaper.sweep()).toEqual([]);
      await until('both deadlines pass', async () =>
        Date.now() > Math.max(ttlAt, idleAt) ? true : undefined,
      );
      const swept = await t.core.sessions?.reaper.sweep();
      expect(new Set(swept)).toEqual(new Set([ttl, idle]));
      expect((await run(ttl)).outputs.result).toEqual({ endReason: 'expired' });
      expect((await run(idle)).outputs.result).toEqual({ endReason: 'idle' });
      for (const id of [ttl, idle]) expect((await run(id)).status).toBe('succeeded');
    } finally {
      t.core.sessions?.reaper.start();
    }
  }, 60_000);

  it('the loop reaps on its own; a cancelled session is disposed and its record closed(cancelled)', async () => {
    const id = await open({ ttlSec: 1, idleTimeoutSec: 600 });
    await until('reaped by the loop', async () =>
      (await run(id)).status === 'succeeded' ? true : undefined,
    );
    const c = await open();
    expect(sandboxRuns(t.stateDir)).toContain(c);
    expect((await call('POST', `/runs/${c}/cancel`, {})).status).toBe(200);
    await until('cancelled session disposed', async () =>
      sandboxRuns(t.stateDir).includes(c) ? undefined : true,
    );
    const record = await call('GET', `/runs/${c}/record`);
    expect(JSON.stringify(record.body.wire)).toContain('cancelled');
    expect((await run(c)).status).toBe('cancelled');
    expect(sandboxRuns(t.stateDir)).not.toContain(id);
    expect((await call('GET', '/sandboxes')).body.items).not.toContainEqual(
      expect.objectContaining({ id: c }),
    );
  }, 60_000);
});

describe('the session trajectory', () => {
  it('an exec whose record the trajectory store refuses answers 503 storage_unavailable, its bytes uncounted; the next is recorded', async () => {
    const id = await open();
    const trajectories = t.core.trajectories;
    if (!trajectories) throw new Error('no trajectory store');
    const bytesOf = async () =>
      Number(
        (
          await t.core.internals.deps.db
            .selectFrom('sessions')
            .select('trajectory_bytes')
            .where('run_id', '=', id)
            .executeTakeFirstOrThrow()
        ).trajectory_bytes,
      );
    const exec = (word: string) => call('POST', `/sandboxes/${id}/exec`, { command: ['echo', word] });
    expect((await exec('one')).status).toBe(200);
    const stored = await bytesOf();
    // The store's backend refuses the next chunk write once, as a disk or bucket that does not answer.
    const backend = trajectories.store.backend;
    const put = backend.put;
    let refusals = 1;
    backend.put = async (key, body) => {
      if (refusals > 0 && key.path.includes('/chunks/')) {
        refusals -= 1;
        throw new TrajectoryStoreError('storage_unavailable', `write ${key.path}: EIO`);
      }
      return put.call(backend, key, body);
    };
    try {
      const lost = await exec('two');
      expect(lost.status, JSON.stringify(lost.body)).toBe(503);
      expect(lost.body).toMatchObject({ code: 'storage_unavailable', reason: 'trajectory_unavailable' });
      expect(refusals).toBe(0);
      expect(await bytesOf()).toBe(stored);
      expect((await exec('three')).status).toBe(200);
    } finally {
      backend.put = put;
    }
    expect(await bytesOf()).toBe(stored + 'echo three'.length + 'three\n'.length);
    const page = await trajectories.read('default', id, { offset: 0, limit: 100 });
    const outputs = page.items
      .filter((e) => e.type === 'tool_result')
      .map((e) => (e as unknown as { output: { stdout: string } }).output.stdout);
    expect(outputs).toEqual(['one\n', 'three\n']);
    expect((await call('POST', `/sandboxes/${id}/close`)).status).toBe(200);
  }, 60_000);
});

describe('the tenant policy on a session', () => {
  it("a ttlSec above the tenant's maxSessionTtlSec is 400 out_of_range in the one refusal shape, and opens nothing", async () => {
    const key = await t.tenant('ttl-capped', { maxSessionTtlSec: 120 });
    const before = sandboxesIn(t.stateDir).length;
    const r = await call('POST', '/sandboxes', { ttlSec: 121, idleTimeoutSec: 60 }, key);
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body).toMatchObject({
      code: 'out_of_range',
      issues: [{ code: 'too_big', path: ['ttlSec'], in: 'body' }],
    });
    expect(r.body.detail).toContain('body field "ttlSec"');
    expect(r.body).not.toHaveProperty('details');
    expect(sandboxesIn(t.stateDir).length).toBe(before);
    const listed = await call('GET', '/sandboxes', undefined, key);
    expect(listed.body.items).toEqual([]);
  });
});
