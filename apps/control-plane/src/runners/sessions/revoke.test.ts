// A revoked runner loses its sandbox sessions: on a real core (PGlite) behind a real node server, a runner's
// side spoken over a real WebSocket by the test (its driver calls answered by a real process driver), a session
// is opened on the runner and execs there; the runner is revoked (POST /runners/{id}/revoke); then its channel
// is closed, an exec is refused without reaching the runner, and the sweep settles the session lost.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeBytes, encodeBytes, isPlacementError, type SandboxHandle } from '@everdict/placement';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { type Json, SESSION_ADMIN_KEY, type SessionTestApp, sessionTestApp } from '../../../test/sessions.js';
import { call as rawCall, until } from '../../http/testing/harness.js';
import { pairingProof } from '../../http/testing/runners.js';
import { revokeRunner } from '../admin.js';
import { expireHolder } from '../leases.js';

let t: SessionTestApp;
let server: Server;
let port: number;
beforeAll(async () => {
  t = await sessionTestApp({ sweepMs: 200 });
  const hub = t.core.sessionHub;
  if (!hub) throw new Error('no session hub');
  server = serve({ fetch: t.app.fetch, port: 0, hostname: '127.0.0.1' }) as Server;
  server.on('upgrade', (req, socket, head) => {
    if (!hub.upgrade(req, socket, head)) socket.destroy();
  });
  await new Promise<void>((r) => (server.listening ? r() : server.once('listening', () => r())));
  port = (server.address() as AddressInfo).port;
}, 240_000);
afterAll(async () => {
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  await t?.close();
});

const call = (method: string, path: string, body?: unknown) =>
  rawCall(t.app, method, path, { key: SESSION_ADMIN_KEY, ...(body === undefined ? {} : { body }) });

type DriverArgs = {
  spec: Parameters<SessionTestApp['driver']['provision']>[0];
  handle: SandboxHandle;
  cmd: Parameters<SessionTestApp['driver']['exec']>[1];
  options: Parameters<SessionTestApp['driver']['exec']>[2];
};

/** The runner's side of the channel: each driver call answered by the test's process driver; ops counted. */
function runnerSide(credential: string, ops: string[], provisioned: SandboxHandle[]): Promise<WebSocket> {
  const answer = async (op: string, args: DriverArgs): Promise<unknown> => {
    if (op === 'provision') {
      const handle = await t.driver.provision(args.spec);
      provisioned.push(handle);
      return handle;
    }
    if (op === 'exec') return t.driver.exec(args.handle, args.cmd, args.options);
    if (op === 'dispose') return t.driver.dispose(args.handle);
    if (op === 'reap' || op === 'held') return [];
    throw new Error(`op ${op} is not spoken by this test's runner`);
  };
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/runner/v1/sessions`, {
      headers: { authorization: `Bearer ${credential}` },
    });
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      const f = JSON.parse(String(data)) as { t: string; id: string; op: string; args: unknown };
      if (f.t !== 'call') return;
      ops.push(f.op);
      answer(f.op, decodeBytes(f.args) as DriverArgs).then(
        (value) =>
          ws.send(JSON.stringify({ t: 'result', id: f.id, ok: true, value: encodeBytes(value ?? null) })),
        (e: unknown) =>
          ws.send(
            JSON.stringify({
              t: 'result',
              id: f.id,
              ok: false,
              error: { code: isPlacementError(e) ? e.code : 'internal', message: String(e), detail: {} },
            }),
          ),
      );
    });
    ws.once('open', () => {
      ws.send(
        JSON.stringify({ t: 'hello', description: t.driver.describe(), images: ['default'], slots: 2 }),
      );
      resolve(ws);
    });
    ws.once('unexpected-response', (_req, res) => reject(new Error(`status ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

async function pairSessionRunner(name: string): Promise<{ runnerId: string; credential: string }> {
  const minted = await call('POST', '/runners/pairing-tokens', {});
  expect(minted.status).toBe(201);
  const paired = await rawCall(t.app, 'POST', '/runners/pair', {
    key: null,
    body: {
      token: minted.body.token,
      ...pairingProof(String(minted.body.token)),
      name,
      capabilities: { drivers: ['process'], kinds: ['sandbox'], images: ['default'], slots: 2 },
    },
  });
  expect(paired.status, JSON.stringify(paired.body)).toBe(201);
  return { runnerId: String(paired.body.runnerId), credential: String(paired.body.credential) };
}

describe('revoking a runner that holds sessions', () => {
  it('closes its channel: an exec is refused before it reaches the runner, and the session is settled lost', async () => {
    const { runnerId, credential } = await pairSessionRunner('sessions-runner');
    const ops: string[] = [];
    const provisioned: SandboxHandle[] = [];
    const ws = await runnerSide(credential, ops, provisioned);
    const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
    try {
      const hub = t.core.sessionHub;
      if (!hub) throw new Error('no session hub');
      await until('the channel registered', async () =>
        (await hub.place('default', 'process', 'default')) === runnerId ? true : undefined,
      );
      const opened = await call('POST', '/sandboxes', {
        ttlSec: 600,
        idleTimeoutSec: 600,
        placement: { where: 'driver', isolation: 'process', target: runnerId },
      });
      expect(opened.status, JSON.stringify(opened.body)).toBe(201);
      const id = String((opened.body.run as Json).id);
      const before = await call('POST', `/sandboxes/${id}/exec`, { command: ['true'] });
      expect(before.status, JSON.stringify(before.body)).toBe(200);
      const execs = ops.filter((op) => op === 'exec').length;
      expect(execs).toBe(1);

      const revoked = await call('POST', `/runners/${runnerId}/revoke`);
      expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
      expect(hub.connected(runnerId)).toBe(false);
      const after = await call('POST', `/sandboxes/${id}/exec`, { command: ['true'] });
      expect(after.status, JSON.stringify(after.body)).not.toBe(200);
      expect(ops.filter((op) => op === 'exec').length).toBe(execs);
      expect(await closed).toBe(1008);
      const settled = await until('the session settled lost', async () => {
        const run = (await call('GET', `/runs/${id}`)).body as Json;
        return run.status === 'running' ? undefined : run;
      });
      expect(settled).toMatchObject({ status: 'failed', error: { code: 'executor_lost' } });
      expect(ops.filter((op) => op === 'exec').length).toBe(execs);
    } finally {
      ws.close();
      for (const h of provisioned) await t.driver.dispose(h).catch(() => undefined);
    }
  }, 120_000);

  it('a revoke the hub was not told of (another replica’s) closes the channel at its NOTIFY or the next touch', async () => {
    const { runnerId, credential } = await pairSessionRunner('told-by-notify');
    const ws = await runnerSide(credential, [], []);
    let closedWith: number | undefined;
    ws.once('close', (code) => {
      closedWith = code;
    });
    try {
      const hub = t.core.sessionHub;
      if (!hub) throw new Error('no session hub');
      await until('the channel registered', async () =>
        (await hub.place('default', 'process', 'default')) === runnerId ? true : undefined,
      );
      // The revoke's transaction alone, as another replica commits it: this hub hears only the database.
      const admin = await t.core.services.auth.authenticate(SESSION_ADMIN_KEY);
      await revokeRunner(t.core.internals.deps, admin, runnerId, expireHolder);
      // Within a touch interval (the lease / 3) at the latest.
      expect(await until('the channel closed', async () => closedWith, 20_000)).toBe(1008);
      expect(hub.connected(runnerId)).toBe(false);
      const row = await t.core.internals.deps.db
        .selectFrom('session_channels')
        .select('runner_id')
        .where('runner_id', '=', runnerId)
        .executeTakeFirst();
      expect(row).toBeUndefined();
    } finally {
      ws.close();
    }
  }, 120_000);
});
