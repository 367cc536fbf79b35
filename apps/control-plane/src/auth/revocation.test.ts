// A revoked API key ends what it holds open, not only its next request: the SSE streams opened with it
// (`/console/feed`, `GET /runs/:id/events`, `GET /runs/:id/trajectory/stream`) end with an `error` event
// `{code: "unauthorized"}` — on a revoke through this replica, on a revocation heard by NOTIFY (another
// replica's), and on one whose NOTIFY was missed (the periodic re-check). Real core, PGlite.
import { randomBytes } from 'node:crypto';
import { generateSigningKey } from '@everdict/runrecord';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMAND_SPEC, call, type TestApp, testApp } from '../http/testing/harness.js';
import { agentHostPairingProof, pairingProof } from '../http/testing/runners.js';
import { hashKey } from '../services/auth.js';
import { mintTicket, redeemTicket } from '../sessions/tickets.js';
import { KEYS_CHANNEL } from './key-cache.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ heartbeatMs: 50 });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

/** A fresh member key of tenant `default`: its raw secret and id. */
async function memberKey(): Promise<{ key: string; id: string }> {
  const made = await call(t.app, 'POST', '/api-keys', { body: { role: 'member' } });
  expect(made.status).toBe(201);
  return { key: String(made.body.key), id: String(made.body.id) };
}

/** Read the stream until it ends (the server closed it) or `ms` pass; the text it sent. */
async function readToEnd(res: Response, ms = 20_000): Promise<{ text: string; ended: boolean }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const deadline = Date.now() + ms;
  for (;;) {
    const next = await Promise.race([
      reader.read(),
      new Promise<null>((r) => setTimeout(() => r(null), Math.max(0, deadline - Date.now()))),
    ]);
    if (next === null) {
      await reader.cancel();
      return { text, ended: false };
    }
    if (next.done) return { text, ended: true };
    text += decoder.decode(next.value, { stream: true });
  }
}

/** Open the stream, wait for its first bytes (it is live), revoke with `revoke`, read it to its end. */
async function revokedWhileOpen(path: string, key: string, revoke: () => Promise<void>) {
  const res = await t.app.request(path, {
    headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' },
  });
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  const first = await reader.read(); // the stream is open and answering (a `ready` event or a keep-alive)
  expect(first.done).toBe(false);
  reader.releaseLock();
  await revoke();
  return readToEnd(res);
}

const lastEvent = (text: string) => {
  const events = [...text.matchAll(/^event: (.+)\ndata: (.+)$/gm)];
  const last = events.at(-1);
  return last ? { event: last[1], data: JSON.parse(last[2] ?? '{}') as Record<string, unknown> } : undefined;
};

const revokeByApi = (id: string) => async () => {
  expect((await call(t.app, 'POST', `/api-keys/${id}/revoke`)).status).toBe(200);
};

describe('a revoked key ends the streams it opened', () => {
  it('/console/feed: revoked on this replica', async () => {
    const { key, id } = await memberKey();
    const { text, ended } = await revokedWhileOpen('/console/feed', key, revokeByApi(id));
    expect(ended).toBe(true);
    expect(lastEvent(text)).toEqual({
      event: 'error',
      data: expect.objectContaining({ code: 'unauthorized' }),
    });
    // …and the key's next request is refused, as before.
    expect((await call(t.app, 'GET', '/runs', { key })).status).toBe(401);
  });

  it('GET /runs/:id/events (a run that stays queued): revoked on this replica', async () => {
    const { key, id } = await memberKey();
    const created = await call(t.app, 'POST', '/runs', { key, body: COMMAND_SPEC });
    const runId = (created.body.run as { id: string }).id;
    const { text, ended } = await revokedWhileOpen(`/runs/${runId}/events`, key, revokeByApi(id));
    expect(ended).toBe(true);
    expect(lastEvent(text)?.event).toBe('error');
    expect(lastEvent(text)?.data.code).toBe('unauthorized');
  });

  it('GET /runs/:id/trajectory/stream: revoked on this replica', async () => {
    const { key, id } = await memberKey();
    const created = await call(t.app, 'POST', '/runs', { key, body: COMMAND_SPEC });
    const runId = (created.body.run as { id: string }).id;
    const { text, ended } = await revokedWhileOpen(`/runs/${runId}/trajectory/stream`, key, revokeByApi(id));
    expect(ended).toBe(true);
    expect(lastEvent(text)?.data.code).toBe('unauthorized');
  });

  it('/console/feed: revoked by another replica (heard by NOTIFY, no local eviction)', async () => {
    const { key } = await memberKey();
    const db = t.core.internals.deps.db;
    const { text, ended } = await revokedWhileOpen('/console/feed', key, async () => {
      // What another replica's revoke does: the row and the NOTIFY in one transaction.
      await db.transaction().execute(async (tx) => {
        await sql`UPDATE api_keys SET revoked_at = now() WHERE key_hash = ${hashKey(key)}`.execute(tx);
        await sql`SELECT pg_notify(${KEYS_CHANNEL}, ${hashKey(key)})`.execute(tx);
      });
    });
    expect(ended).toBe(true);
    expect(lastEvent(text)?.data.code).toBe('unauthorized');
  });

  it('/console/feed: a revocation whose NOTIFY was missed ends it at the next re-check', async () => {
    const { key } = await memberKey();
    const db = t.core.internals.deps.db;
    const { text, ended } = await revokedWhileOpen('/console/feed', key, async () => {
      await sql`UPDATE api_keys SET revoked_at = now() WHERE key_hash = ${hashKey(key)}`.execute(db);
    });
    expect(ended).toBe(true);
    expect(lastEvent(text)?.data.code).toBe('unauthorized');
  }, 30_000);

  it("another key's revocation leaves the stream open", async () => {
    const { key } = await memberKey();
    const other = await memberKey();
    const res = await t.app.request('/console/feed', {
      headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' },
    });
    const reader = res.body!.getReader();
    expect((await reader.read()).done).toBe(false);
    await revokeByApi(other.id)();
    // Still live: it keeps sending (keep-alives every 50 ms) after the other key's revoke was heard.
    for (let i = 0; i < 5; i++) expect((await reader.read()).done).toBe(false);
    await reader.cancel();
  });
});

describe('a revoked key ends its terminal tickets', () => {
  it('a ticket minted before the revoke is refused after it (and one of a live key is not)', async () => {
    const db = t.core.internals.deps.db;
    const revoked = await memberKey();
    const live = await memberKey();
    const created = await call(t.app, 'POST', '/runs', { key: revoked.key, body: COMMAND_SPEC });
    const runId = (created.body.run as { id: string }).id;
    const now = () => new Date();
    const stale = await mintTicket(db, 'default', runId, revoked.id, now());
    const fresh = await mintTicket(db, 'default', runId, live.id, now());
    await revokeByApi(revoked.id)();
    await expect(redeemTicket(db, runId, stale.ticket, now())).rejects.toMatchObject({
      code: 'invalid_terminal_ticket',
    });
    expect(await redeemTicket(db, runId, fresh.ticket, now())).toEqual({ tenant: 'default', actor: live.id });
  });
});

describe('a revoked key ends its unredeemed pairing tokens', () => {
  it('a runner or agent host pairing with a token a revoked admin key minted is 401 and nothing pairs', async () => {
    const made = await call(t.app, 'POST', '/api-keys', { body: { role: 'admin' } });
    const admin = { key: String(made.body.key), id: String(made.body.id) };
    const mint = async () => {
      const r = await call(t.app, 'POST', '/runners/pairing-tokens', { key: admin.key, body: {} });
      expect(r.status).toBe(201);
      return String(r.body.token);
    };
    const forRunner = await mint();
    const forHost = await mint();
    const db = t.core.internals.deps.db;
    const paired = async () =>
      Number(
        (
          await sql<{
            n: string;
          }>`SELECT (SELECT count(*) FROM runners) + (SELECT count(*) FROM agent_hosts) AS n`.execute(db)
        ).rows[0]?.n,
      );
    const before = await paired();
    await revokeByApi(admin.id)();
    const key = generateSigningKey(randomBytes(32));
    const runner = await call(t.app, 'POST', '/runners/pair', {
      key: null,
      body: {
        token: forRunner,
        ...pairingProof(forRunner, key),
        name: 'late',
        capabilities: { drivers: ['process'], kinds: ['command'], images: ['default'], slots: 1 },
      },
    });
    expect(runner.status).toBe(401);
    expect(runner.body.code).toBe('invalid_pairing_token');
    const host = await call(t.app, 'POST', '/agents/hosts/pair', {
      key: null,
      body: { token: forHost, ...agentHostPairingProof(forHost, key), name: 'late' },
    });
    expect(host.status).toBe(401);
    expect(host.body.code).toBe('invalid_pairing_token');
    expect(await paired()).toBe(before);
    // A live admin's token still pairs.
    const live = String((await call(t.app, 'POST', '/runners/pairing-tokens', { body: {} })).body.token);
    const ok = await call(t.app, 'POST', '/agents/hosts/pair', {
      key: null,
      body: { token: live, ...agentHostPairingProof(live, key), name: 'fine' },
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
  });
});
