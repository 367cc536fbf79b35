// The terminal over a real node server: a ticket (creator or admin), the WebSocket upgrade, a shell in the
// sandbox's pty — binary frames raw, text frames resize / exit — and the ticket's single use: a second
// redemption, an expired ticket and another run's ticket are refused 401; a ticket offered after the session's
// idle deadline is refused 409 session_ended and left unspent. Terminal bytes land in the trajectory; bytes
// the trajectory store refuses end the terminal (an error frame, close 1013), are logged, and leave a gap event.

import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TrajectoryStoreError } from '@everdict/trajectory-store';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { SESSION_ADMIN_KEY, type SessionTestApp, sessionTestApp } from '../../test/sessions.js';
import { call, until } from '../http/testing/harness.js';
import { terminalServer } from './terminal.js';

let t: SessionTestApp;
let server: Server;
let port: number;
let closeTerminals: () => Promise<void>;
beforeAll(async () => {
  t = await sessionTestApp({ sweep: false });
  const terminals = terminalServer(t.core.services.sessions!);
  closeTerminals = terminals.close;
  server = serve({ fetch: t.app.fetch, port: 0, hostname: '127.0.0.1' }) as Server;
  server.on('upgrade', (req, socket, head) => {
    if (!terminals.upgrade(req, socket, head)) socket.destroy();
  });
  await new Promise<void>((r) => (server.listening ? r() : server.once('listening', () => r())));
  port = (server.address() as AddressInfo).port;
}, 240_000);
afterAll(async () => {
  await closeTerminals?.();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  await t?.close();
});

const api = (method: string, p: string, body?: unknown, key = SESSION_ADMIN_KEY) =>
  call(t.app, method, p, { key, ...(body === undefined ? {} : { body }) });
async function openSession(key = SESSION_ADMIN_KEY) {
  const r = await api('POST', '/sandboxes', { ttlSec: 600, idleTimeoutSec: 600 }, key);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return (r.body.run as { id: string }).id;
}
async function ticketFor(id: string, key = SESSION_ADMIN_KEY) {
  const r = await api('POST', `/runs/${id}/terminal-ticket`, undefined, key);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body as { ticket: string; expiresAt: string };
}
const url = (id: string, ticket: string, q = '') =>
  `ws://127.0.0.1:${port}/runs/${id}/terminal?ticket=${encodeURIComponent(ticket)}${q}`;

/** Connects; resolves with the socket, or rejects with the refused upgrade's status. */
function connect(u: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(u);
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`status ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

/** The refused upgrade's answer: its status, content type and problem body. */
function refusal(u: string): Promise<{ status: number; type: string; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(u);
    ws.once('open', () => reject(new Error('the upgrade was accepted')));
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString('utf8')));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          type: String(res.headers['content-type']),
          body: JSON.parse(text) as Record<string, unknown>,
        }),
      );
    });
    ws.once('error', () => undefined);
  });
}

describe('terminal', () => {
  it('a shell over the WebSocket: raw bytes, resize, exit; the ticket is spent; the trajectory has the bytes', async () => {
    const id = await openSession();
    const { ticket, expiresAt } = await ticketFor(id);
    expect(Date.parse(expiresAt) - Date.now()).toBeLessThanOrEqual(31_000);
    const ws = await connect(url(id, ticket, '&cols=100&rows=30'));
    let out = '';
    const texts: string[] = [];
    ws.on('message', (data, isBinary) => {
      if (isBinary) out += Buffer.from(data as Buffer).toString('utf8');
      else texts.push(Buffer.from(data as Buffer).toString('utf8'));
    });
    ws.send(Buffer.from('stty size; echo hi-$((1+2))\n'), { binary: true });
    await until('first output', async () =>
      out.includes('hi-3') && out.includes('30 100') ? true : undefined,
    );
    ws.send(JSON.stringify({ type: 'resize', cols: 120, rows: 40 }));
    ws.send(Buffer.from('sleep 0.2; stty size\n'), { binary: true });
    await until('resized', async () => (out.includes('40 120') ? true : undefined));
    const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
    ws.send(Buffer.from('exit 7\n'), { binary: true });
    expect(await closed).toBe(1000);
    expect(texts.map((s) => JSON.parse(s))).toContainEqual({ type: 'exit', code: 7 });

    await expect(connect(url(id, ticket))).rejects.toThrow('status 401'); // single use

    const page = await t.core.trajectories!.read('default', id, { offset: 0, limit: 1000 });
    const terminal = page.items.filter((e) => e.type === 'extension' && e.ext === 'everdict/terminal');
    const decoded = (dir: string) =>
      terminal
        .filter((e) => (e as unknown as { data: { dir: string } }).data.dir === dir)
        .map((e) =>
          Buffer.from((e as unknown as { data: { data: string } }).data.data, 'base64').toString('utf8'),
        )
        .join('');
    expect(decoded('in')).toContain('echo hi-$((1+2))');
    expect(decoded('out')).toContain('hi-3');
    await api('POST', `/sandboxes/${id}/close`);
  }, 120_000);

  it('an expired ticket, another run’s ticket and a junk ticket are refused 401; a non-creator cannot mint one', async () => {
    const a = await openSession();
    const b = await openSession();
    const forA = await ticketFor(a);
    await expect(connect(url(b, forA.ticket))).rejects.toThrow('status 401');
    await expect(connect(url(a, 'evt_junk'))).rejects.toThrow('status 401');
    // A refused upgrade speaks the one problem vocabulary, like any refused request.
    const junk = await refusal(url(a, 'evt_junk'));
    expect(junk.status).toBe(401);
    expect(junk.type).toBe('application/problem+json');
    expect(junk.body).toMatchObject({ status: 401, title: 'Unauthorized' });
    expect(junk.body.type).toBe(`urn:everdict:problem:${String(junk.body.code)}`);
    const badSize = await refusal(url(a, forA.ticket, '&cols=0'));
    expect(badSize.status).toBe(400);
    expect(badSize.body).toMatchObject({
      type: 'urn:everdict:problem:validation_failed',
      code: 'validation_failed',
      title: 'Bad Request',
    });
    const late = await ticketFor(a);
    t.advance(31_000);
    try {
      await expect(connect(url(a, late.ticket))).rejects.toThrow('status 401');
    } finally {
      t.advance(-31_000);
    }
    // The ticket for A that was offered to B was not spent by that refusal.
    const ws = await connect(url(a, forA.ticket));
    ws.close();
    const member = await t.key('member');
    expect((await api('POST', `/runs/${a}/terminal-ticket`, undefined, member)).status).toBe(403);
    const own = await openSession(member);
    expect((await api('POST', `/runs/${own}/terminal-ticket`, undefined, member)).status).toBe(201);
    for (const id of [a, b]) await api('POST', `/sandboxes/${id}/close`);
    await api('POST', `/sandboxes/${own}/close`, undefined, member);
  }, 120_000);

  it('a ticket minted before the idle deadline and offered after it is refused 409 session_ended, unspent; the sweep reaps the session', async () => {
    const r = await api('POST', '/sandboxes', { ttlSec: 600, idleTimeoutSec: 10 });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const id = (r.body.run as { id: string }).id;
    const { ticket } = await ticketFor(id);
    const before = (await api('GET', `/sandboxes/${id}`)).body;
    t.advance(12_000); // past the 10 s idle deadline, within the ticket's 30 s
    try {
      const late = await refusal(url(id, ticket));
      expect(late.status, JSON.stringify(late.body)).toBe(409);
      expect(late.body).toMatchObject({
        code: 'conflict',
        details: { reason: 'session_ended', due: 'idle' },
      });
      expect((await api('GET', `/sandboxes/${id}`)).body).toMatchObject({
        state: 'open',
        idleDeadline: before.idleDeadline,
        lastActivityAt: before.lastActivityAt,
      });
      const spent = await t.core.internals.deps.db
        .selectFrom('terminal_tickets')
        .select('redeemed_at')
        .where('run_id', '=', id)
        .executeTakeFirstOrThrow();
      expect(spent.redeemed_at).toBeNull();
      expect(await t.core.sessions?.reaper.sweep()).toContain(id);
      expect((await api('GET', `/runs/${id}`)).body).toMatchObject({
        status: 'succeeded',
        outputs: { result: { endReason: 'idle' } },
      });
    } finally {
      t.advance(-12_000);
    }
  }, 120_000);

  it('terminal bytes the trajectory store refuses close the terminal 1013 with an error frame, are logged, and leave a gap event', async () => {
    const id = await openSession();
    const { ticket } = await ticketFor(id);
    const trajectories = t.core.trajectories;
    if (!trajectories) throw new Error('no trajectory store');
    const deps = t.core.internals.deps as { log: typeof t.core.internals.deps.log };
    const log = deps.log;
    const warnings: Array<{ msg: string; fields?: Record<string, unknown> }> = [];
    deps.log = (level, msg, fields) => {
      if (level === 'warn') warnings.push({ msg, ...(fields ? { fields } : {}) });
      log(level, msg, fields);
    };
    // The store's backend refuses the terminal's first chunk write, as a disk or bucket that does not answer.
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
      const ws = await connect(url(id, ticket));
      const texts: unknown[] = [];
      ws.on('message', (data, isBinary) => {
        if (!isBinary) texts.push(JSON.parse(Buffer.from(data as Buffer).toString('utf8')));
      });
      const closed = new Promise<{ code: number; reason: string }>((r) =>
        ws.once('close', (code, reason) => r({ code, reason: reason.toString('utf8') })),
      );
      ws.send(Buffer.from('echo gap-$((40+2))\n'), { binary: true });
      await until('the refused write', async () => (refusals === 0 ? true : undefined));
      // A shell that exits now closes 1000 with its exit code — unless the refusal ended the terminal first.
      if (ws.readyState === ws.OPEN) ws.send(Buffer.from('exit 0\n'), { binary: true });
      expect(await closed).toEqual({ code: 1013, reason: 'trajectory_unavailable' });
      expect(texts).toContainEqual(
        expect.objectContaining({
          type: 'error',
          code: 'storage_unavailable',
          reason: 'trajectory_unavailable',
        }),
      );
      expect(texts).not.toContainEqual(expect.objectContaining({ type: 'exit' }));
      expect(warnings).toContainEqual(
        expect.objectContaining({ fields: expect.objectContaining({ runId: id, dir: expect.any(String) }) }),
      );
      // The store answers again: the trajectory says what it is missing.
      const gap = await until('the gap event', async () => {
        const page = await trajectories.read('default', id, { offset: 0, limit: 1000 });
        return page.items.find((e) => e.type === 'extension' && e.ext === 'everdict/terminal-gap');
      });
      const data = (
        gap as unknown as { data: { bytesIn: number; bytesOut: number; since: string; reason: string } }
      ).data;
      expect(Number.isNaN(Date.parse(data.since))).toBe(false);
      expect(data.reason).toBe('trajectory_unavailable');
      expect(data.bytesIn + data.bytesOut).toBeGreaterThan(0);
    } finally {
      backend.put = put;
      deps.log = log;
    }
    await api('POST', `/sandboxes/${id}/close`);
  }, 120_000);
});
