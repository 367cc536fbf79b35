// A terminal outlives its ticket, not its key: the WebSocket a member key's ticket opened ends when that key
// is revoked (an error frame `{code: "unauthorized"}`, close 1008, the shell killed), as main.ts wires it
// (`watchKey` → AuthService.watchKeyId); another key's revocation leaves it open. Real node server, real
// process sandbox, PGlite.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { SESSION_ADMIN_KEY, type SessionTestApp, sessionTestApp } from '../../test/sessions.js';
import { call, until } from '../http/testing/harness.js';
import { terminalServer } from '../sessions/terminal.js';

let t: SessionTestApp;
let server: Server;
let port: number;
let closeTerminals: () => Promise<void>;
beforeAll(async () => {
  t = await sessionTestApp({ sweep: false });
  const auth = t.core.services.auth;
  // What main.ts passes.
  const terminals = terminalServer(t.core.services.sessions!, {
    watchKey: (keyId, onRevoked) => auth.watchKeyId?.(keyId, onRevoked) ?? (() => undefined),
  });
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

async function memberKey(): Promise<{ key: string; id: string }> {
  const made = await call(t.app, 'POST', '/api-keys', { key: SESSION_ADMIN_KEY, body: { role: 'member' } });
  expect(made.status).toBe(201);
  return { key: String(made.body.key), id: String(made.body.id) };
}

/** A member's open terminal: the socket, what it received, and its close code once closed. */
async function openTerminal(key: string) {
  const opened = await call(t.app, 'POST', '/sandboxes', { key, body: { ttlSec: 600, idleTimeoutSec: 600 } });
  expect(opened.status, JSON.stringify(opened.body)).toBe(201);
  const id = (opened.body.run as { id: string }).id;
  const ticket = await call(t.app, 'POST', `/runs/${id}/terminal-ticket`, { key });
  expect(ticket.status).toBe(201);
  const ws = new WebSocket(
    `ws://127.0.0.1:${port}/runs/${id}/terminal?ticket=${encodeURIComponent(String(ticket.body.ticket))}`,
  );
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const seen = { out: '', texts: [] as string[], closed: undefined as number | undefined };
  ws.on('message', (data, isBinary) => {
    const s = Buffer.from(data as Buffer).toString('utf8');
    if (isBinary) seen.out += s;
    else seen.texts.push(s);
  });
  ws.on('close', (code) => {
    seen.closed = code;
  });
  ws.send(Buffer.from('echo up-$((2+3))\n'), { binary: true });
  await until('the shell answers', async () => (seen.out.includes('up-5') ? true : undefined), 60_000);
  return { id, ws, seen };
}

describe('a revoked key ends the terminal its ticket opened', () => {
  it('revoke → error frame, close 1008; another key’s revoke leaves a terminal open', async () => {
    const member = await memberKey();
    const bystander = await memberKey();
    const other = await memberKey();
    const mine = await openTerminal(member.key);
    const theirs = await openTerminal(bystander.key);

    const revoke = (id: string) => call(t.app, 'POST', `/api-keys/${id}/revoke`, { key: SESSION_ADMIN_KEY });
    expect((await revoke(other.id)).status).toBe(200);
    expect((await revoke(member.id)).status).toBe(200);
    const code = await until('the terminal closes', async () => mine.seen.closed, 30_000);
    expect(code).toBe(1008);
    expect(mine.seen.texts.map((s) => JSON.parse(s) as { code?: string })).toContainEqual(
      expect.objectContaining({ type: 'error', code: 'unauthorized' }),
    );

    // The bystander's terminal heard both revocations and still answers.
    theirs.ws.send(Buffer.from('echo still-$((3+4))\n'), { binary: true });
    await until('the other shell answers', async () =>
      theirs.seen.out.includes('still-7') ? true : undefined,
    );
    expect(theirs.seen.closed).toBeUndefined();
    theirs.ws.close();
    for (const id of [mine.id, theirs.id])
      await call(t.app, 'POST', `/sandboxes/${id}/close`, { key: SESSION_ADMIN_KEY });
  }, 120_000);
});
