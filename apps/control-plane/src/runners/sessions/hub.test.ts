// The session channel hub on a real core (PGlite) behind a real node server, with a runner's side spoken
// over a real WebSocket by the test: a junk credential is refused 401 at the upgrade; a paired runner's hello
// registers its channel (placement finds it by driver and image, not for another driver); reconciliation
// disposes what the runner holds that no open session row names, and keeps what a row names; a runner is
// placed only in images it registered for the kind `sandbox` when it paired, whatever its hello announces.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { type SessionTestApp, sessionTestApp } from '../../../test/sessions.js';
import { until } from '../../http/testing/harness.js';
import { pairingProof } from '../../http/testing/runners.js';
import { runnerHolder } from './hub.js';

let t: SessionTestApp;
let server: Server;
let port: number;
beforeAll(async () => {
  t = await sessionTestApp({ sweep: false });
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

const handle = (runId: string, id: string) => ({
  id,
  driver: 'process',
  labels: { tenant: 'default', runId, kind: 'sandbox' },
  environment: { driver: 'process', image: 'default', imageDigest: null, address: 'a'.repeat(64) },
  limits: { memoryBytes: 1, pids: 1, wallTimeoutMs: 1 },
  network: 'none',
  createdAtMs: 0,
  deadlineMs: 1,
});

function connect(credential: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/runner/v1/sessions`, {
      headers: { authorization: `Bearer ${credential}` },
    });
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`status ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

/** A key of its own for each runner (a public key pairs one runner). */

describe('runner session hub', () => {
  it('refuses a junk credential 401 at the upgrade', async () => {
    await expect(connect('evr_junk')).rejects.toThrow('status 401');
  });

  it('registers a hello, places by driver and image, and reconciles held compute against the rows', async () => {
    const runners = t.core.services.runners;
    if (!runners) throw new Error('no runner service');
    const { token } = await runners.mintSharedPairingToken({});
    const { runnerId, credential } = await runners.pair({
      token,
      ...pairingProof(token),
      name: 'hub-test',
      capabilities: { drivers: ['process'], kinds: ['command', 'sandbox'], images: ['default'], slots: 2 },
    });
    const ws = await connect(credential);
    const held = [
      { handle: handle('run_named', 'sbx-named'), ageMs: 5_000 },
      { handle: handle('run_orphan', 'sbx-orphan'), ageMs: 5_000 },
    ];
    const disposed: string[] = [];
    ws.on('message', (data) => {
      const f = JSON.parse(String(data)) as { id: string; op: string; args: { handle?: { id: string } } };
      if (f.op === 'reap') ws.send(JSON.stringify({ t: 'result', id: f.id, ok: true, value: [] }));
      if (f.op === 'held') ws.send(JSON.stringify({ t: 'result', id: f.id, ok: true, value: held }));
      if (f.op === 'dispose') {
        disposed.push(f.args.handle?.id ?? '');
        ws.send(JSON.stringify({ t: 'result', id: f.id, ok: true, value: null }));
      }
    });
    ws.send(JSON.stringify({ t: 'hello', description: t.driver.describe(), images: ['default'], slots: 2 }));
    const hub = t.core.sessionHub;
    if (!hub) throw new Error('no session hub');
    await until('the channel registered', async () =>
      (await hub.place('default', 'process', 'default')) === runnerId ? true : undefined,
    );
    expect(hub.connected(runnerId)).toBe(true);
    expect(await hub.place('default', 'kubernetes', 'default')).toBeNull();
    expect(await hub.place('default', 'process', 'ubuntu:24.04')).toBeNull();

    // One open row names sbx-named on this runner; nothing names sbx-orphan.
    const now = new Date();
    await t.core.internals.deps.db
      .insertInto('sessions')
      .values({
        tenant_id: 'default',
        run_id: 'run_named',
        created_by: 'test',
        image: 'default',
        state: 'open',
        idle_timeout_sec: 60,
        opened_at: now,
        expires_at: new Date(now.getTime() + 60_000),
        idle_deadline: new Date(now.getTime() + 60_000),
        last_activity_at: now,
        holder: runnerHolder(runnerId),
        handle: JSON.stringify(handle('run_named', 'sbx-named')),
      })
      .execute();
    expect(await hub.reconcile(10_000)).toBe(0); // younger than the grace: an open may be in flight
    expect(await hub.reconcile(1_000)).toBe(1);
    expect(disposed).toEqual(['sbx-orphan']);
    await t.core.internals.deps.db.deleteFrom('sessions').where('run_id', '=', 'run_named').execute();
    ws.close();
    await until('the channel closed', async () => (hub.connected(runnerId) ? undefined : true));
  }, 120_000);

  it('places only in images a runner registered for `sandbox`: neither a hello announcing `*` nor another kind widens its pairing', async () => {
    const runners = t.core.services.runners;
    const hub = t.core.sessionHub;
    if (!runners || !hub) throw new Error('no runner service or session hub');
    const paired = async (name: string, kinds: ('command' | 'sandbox')[], images: string[]) => {
      const { token } = await runners.mintSharedPairingToken({});
      return runners.pair({
        token,
        ...pairingProof(token),
        name,
        capabilities: { drivers: ['process'], kinds, images, slots: 2 },
      });
    };
    const a = await paired('alpine-only', ['command', 'sandbox'], ['alpine']);
    const b = await paired('foo', ['sandbox'], ['foo']);
    // Every image, but for command runs only: it holds no sessions.
    const c = await paired('commands-only', ['command'], ['*']);
    const say = async (credential: string, images: string[]) => {
      const ws = await connect(credential);
      ws.on('message', (data) => {
        const f = JSON.parse(String(data)) as { id: string; op: string };
        if (f.op === 'reap' || f.op === 'held')
          ws.send(JSON.stringify({ t: 'result', id: f.id, ok: true, value: [] }));
      });
      ws.send(JSON.stringify({ t: 'hello', description: t.driver.describe(), images, slots: 2 }));
      return ws;
    };
    const wsA = await say(a.credential, ['*']);
    const wsB = await say(b.credential, ['foo']);
    const wsC = await say(c.credential, ['*']);
    try {
      await until('the channels registered', async () =>
        hub.connected(b.runnerId) &&
        hub.connected(c.runnerId) &&
        (await hub.place('default', 'process', 'alpine')) === a.runnerId
          ? true
          : undefined,
      );
      expect(await hub.place('default', 'process', 'alpine', c.runnerId)).toBeNull();
      expect(await hub.place('default', 'process', 'foo', a.runnerId)).toBeNull();
      expect(await hub.place('default', 'process', 'foo')).toBe(b.runnerId);
      expect(await hub.place('default', 'process', 'ubuntu:24.04')).toBeNull();
      wsB.close();
      await until('B closed', async () => (hub.connected(b.runnerId) ? undefined : true));
      expect(await hub.place('default', 'process', 'foo')).toBeNull();
    } finally {
      wsA.close();
      wsB.close();
      wsC.close();
    }
    await until('A closed', async () => (hub.connected(a.runnerId) ? undefined : true));
    await until('C closed', async () => (hub.connected(c.runnerId) ? undefined : true));
  }, 120_000);
});
