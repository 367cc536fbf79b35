// GET /sandboxes prices a session exactly as its settle will: the money its run's usage then says and the
// energy its record then holds (runrecord's cost) — a parked session's park at the park's rate, not at the
// rate of an open sandbox. On real bubblewrap sandboxes and the session tests' movable clock; each session
// is looked at past its deadline, where the held time stops, so the look and the settle price the same span.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Json, type SessionTestApp, sessionTestApp } from '../../test/sessions.js';
import { call } from '../http/testing/harness.js';

let t: SessionTestApp;
let key: string;
beforeAll(async () => {
  t = await sessionTestApp({ sweep: false });
  key = await t.tenant('pricing', { sessionUsdPerHour: 3600, budget: { usd: 10_000 } });
}, 240_000);
afterAll(async () => {
  await t?.close();
});

const api = async (method: string, p: string, body?: unknown) => {
  const r = await call(t.app, method, p, { key, ...(body === undefined ? {} : { body }) });
  expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
  return r.body as Json;
};

async function open(ttlSec: number, idleTimeoutSec: number): Promise<string> {
  return ((await api('POST', '/sandboxes', { ttlSec, idleTimeoutSec })).run as { id: string }).id;
}

/** The burn the detail and the list show now. */
async function burn(id: string): Promise<{ shown: Json; listed: Json | undefined }> {
  const shown = (await api('GET', `/sandboxes/${id}`)).burn as Json;
  const listed = ((await api('GET', '/sandboxes')).items as Json[]).find((s) => s.id === id);
  return { shown, listed: listed?.burn };
}

/** What the settled run says: its usage's money and its record's energy (runrecord's cost). */
async function settled(id: string): Promise<{ usd: number; energyUj: number }> {
  const run = await api('GET', `/runs/${id}`);
  expect(run.status).toBe('succeeded');
  const record = await api('GET', `/runs/${id}/record`);
  expect(record.verify.ok).toBe(true);
  return { usd: run.usage.costUsd, energyUj: Number(record.verify.cost.totalUj) };
}

describe('GET /sandboxes prices what the settle records', () => {
  it('a parked session: its park at the park rate, exactly as the closed record says', async () => {
    const id = await open(30, 600);
    await api('POST', `/sandboxes/${id}/exec`, { command: ['true'] });
    await api('POST', `/sandboxes/${id}/suspend`);
    t.advance(3_600_000); // an hour parked, past its expiry: the held time stops at the expiry
    const { shown, listed } = await burn(id);
    await api('POST', `/sandboxes/${id}/close`);
    const record = await settled(id);
    expect(shown.energyUj).toBe(record.energyUj);
    expect(shown.usd).toBeCloseTo(record.usd, 9);
    expect(listed).toEqual(shown);
    // An hour at an open sandbox's 2 W would be 7.2e9 µJ; the park draws a small fraction of that.
    expect(shown.energyUj).toBeLessThan(1e9);
  }, 120_000);

  it('a parked session closes resumed → closed: no executed interval it did not run', async () => {
    const id = await open(600, 600);
    await api('POST', `/sandboxes/${id}/suspend`);
    t.advance(60_000);
    await api('POST', `/sandboxes/${id}/close`);
    await settled(id);
    const { wire } = await api('GET', `/runs/${id}/record`);
    const kinds = (wire.segments as Json[]).map((g) => g.kind);
    expect(kinds.slice(-3)).toEqual(['suspended', 'resumed', 'closed']);
    expect(kinds.filter((k) => k === 'executed')).toHaveLength(1);
  }, 120_000);

  it('an open session: its interval up to its idle deadline, exactly as the reaped record says', async () => {
    const id = await open(3600, 5);
    t.advance(60_000); // past its idle deadline: the held time stops there
    const { shown, listed } = await burn(id);
    const sweep = (t.core.sessions as { reaper: { sweep(): Promise<string[]> } }).reaper.sweep;
    expect(await sweep.call((t.core.sessions as { reaper: object }).reaper)).toContain(id);
    const record = await settled(id);
    expect(shown.energyUj).toBe(record.energyUj);
    expect(shown.usd).toBeCloseTo(record.usd, 9);
    expect(listed).toEqual(shown);
  }, 120_000);
});
