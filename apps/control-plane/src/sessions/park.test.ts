// The image park on real bubblewrap sandboxes: suspend → resume on a second runner (another driver, another
// state directory) restores the workspace byte for byte; the record carries the park and its idle energy
// (estimated, never zero); a tampered snapshot address or tampered stored bytes are refused 409 and
// nothing changes; idle metering charges the tenant's budget at sessionUsdPerHour.
import path from 'node:path';
import { ProcessDriver } from '@everdict/placement-process';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Json,
  passableDir,
  type SessionTestApp,
  sandboxRuns,
  sessionTestApp,
} from '../../test/sessions.js';
import { call } from '../http/testing/harness.js';
import type { Principal } from '../services/types.js';
import { embeddedCompute } from './compute.js';
import { resumeSession } from './park.js';
import { SessionService } from './service.js';

let t: SessionTestApp;
let second: SessionService;
let secondDir: string;
let key: string;
let principal: Principal;
beforeAll(async () => {
  t = await sessionTestApp({ sweep: false });
  key = await t.tenant('park', { sessionUsdPerHour: 3600, budget: { usd: 1_000 } });
  principal = await t.core.services.auth.authenticate(key);
  secondDir = passableDir('cp-second-runner-');
  const driver2 = new ProcessDriver({
    stateDir: path.join(secondDir, 'state'),
    imagesDir: path.join(secondDir, 'images'),
  });
  second = new SessionService({
    ...(t.core.sessions?.service.core as SessionService['core']),
    compute: embeddedCompute(driver2),
  });
}, 240_000);
afterAll(async () => {
  await t?.close();
});

const api = (method: string, p: string, body?: unknown) =>
  call(t.app, method, p, { key, ...(body === undefined ? {} : { body }) });
const WRITE = [
  'sh',
  '-c',
  'mkdir -p d/e && printf "\\000\\001\\377binary" > d/e/bin && echo hello > a.txt && ln -s a.txt link && chmod 750 a.txt && head -c 200000 /dev/urandom > d/rand && mkdir empty',
];
const DIGEST = [
  'sh',
  '-c',
  'find . | LC_ALL=C sort | while read f; do stat -c "%n %a %F" "$f"; [ -f "$f" ] && [ ! -L "$f" ] && sha256sum "$f"; done; readlink link',
];

async function openWithFiles(): Promise<{ id: string; digest: string }> {
  const r = await api('POST', '/sandboxes', { ttlSec: 600, idleTimeoutSec: 600 });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  const id = (r.body.run as { id: string }).id;
  expect((await api('POST', `/sandboxes/${id}/exec`, { command: WRITE })).body).toMatchObject({
    exitCode: 0,
  });
  const d = await api('POST', `/sandboxes/${id}/exec`, { command: DIGEST });
  expect(d.body.exitCode).toBe(0);
  return { id, digest: d.body.stdout as string };
}
const record = async (id: string) => (await api('GET', `/runs/${id}/record`)).body as Json;

describe('image park', () => {
  it('suspend → resume on a second runner restores the workspace byte for byte; idle energy and money are metered', async () => {
    const { id, digest } = await openWithFiles();
    expect(digest).toContain('./d/e/bin');
    const parked = await api('POST', `/sandboxes/${id}/suspend`);
    expect(parked.status, JSON.stringify(parked.body)).toBe(200);
    expect(parked.body.status).toBe('awaiting_input');
    expect(sandboxRuns(t.stateDir)).not.toContain(id); // compute released
    const listed = ((await api('GET', '/sandboxes')).body.items as Json[]).find((s) => s.id === id);
    expect(listed).toMatchObject({ state: 'parked', status: 'awaiting_input' });
    expect(listed?.snapshot).toMatch(/^[0-9a-f]{64}$/);
    const atPark = await record(id);
    expect(atPark.verify).toMatchObject({ ok: true, phase: 'parked' });
    expect(JSON.stringify(atPark.wire)).toContain(listed?.snapshot);
    expect((await api('POST', `/sandboxes/${id}/exec`, { command: ['true'] })).status).toBe(409);

    const resumed = await resumeSession(second.core, principal, id, {});
    expect(resumed.status).toBe('running');
    expect(sandboxRuns(path.join(secondDir, 'state'))).toContain(id);
    const after = await second.exec(principal, id, { command: DIGEST });
    expect(after.stdout).toBe(digest);
    const atResume = await record(id);
    expect(atResume.verify.ok).toBe(true);
    expect(BigInt(atResume.verify.idleUj ?? '0')).toBeGreaterThan(0n); // estimated, never zero

    const closed = await second.close(principal, id);
    expect(closed.status).toBe('succeeded');
    expect(closed.usage.costUsd).toBeGreaterThan(0);
    const spent = await sql<{
      spent_usd: number | string;
    }>`SELECT spent_usd FROM adm_envelopes_now WHERE tenant = 'park' AND id = 'root:park'`.execute(
      t.core.internals.deps.db,
    );
    expect(Number(spent.rows[0]?.spent_usd)).toBeCloseTo(closed.usage.costUsd, 6);
    expect(sandboxRuns(path.join(secondDir, 'state'))).not.toContain(id);
  }, 120_000);

  it('a tampered snapshot address, or tampered stored bytes, is refused 409 and changes nothing', async () => {
    const { id } = await openWithFiles();
    expect((await api('POST', `/sandboxes/${id}/suspend`)).status).toBe(200);
    const before = await record(id);
    const run = async () => (await api('GET', `/runs/${id}`)).body as Json;
    const runBefore = await run();

    const forged = await api('POST', `/sandboxes/${id}/resume`, { snapshot: 'f'.repeat(64) });
    expect(forged.status, JSON.stringify(forged.body)).toBe(409);
    expect(forged.body.code ?? JSON.stringify(forged.body)).toContain('snapshot_mismatch');

    // The stored tar edited in place: its bytes no longer hash to the parked address.
    const row = await t.core.internals.deps.db
      .selectFrom('sessions')
      .select('park')
      .where('run_id', '=', id)
      .executeTakeFirstOrThrow();
    const park = row.park as unknown as { path: string };
    const backend = t.core.trajectories?.store.backend;
    const bytes = await backend?.get({ tenant: 'park', path: park.path });
    expect(bytes).toBeTruthy();
    const edited = Uint8Array.from(bytes as Uint8Array);
    const at = edited.length - 2000;
    edited[at] = (edited[at] ?? 0) ^ 0xff;
    await backend?.put({ tenant: 'park', path: park.path }, edited);
    const tampered = await api('POST', `/sandboxes/${id}/resume`, {});
    expect(tampered.status, JSON.stringify(tampered.body)).toBe(409);

    expect(await record(id)).toEqual(before);
    const runAfter = await run();
    expect(runAfter.status).toBe('awaiting_input');
    expect(runAfter.updatedAt).toBe(runBefore.updatedAt);
    expect(sandboxRuns(t.stateDir)).not.toContain(id); // the refused resume left no compute
    expect((await api('POST', `/sandboxes/${id}/close`)).status).toBe(200);
  }, 120_000);
});
