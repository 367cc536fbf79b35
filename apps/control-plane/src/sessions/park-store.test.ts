// The image park's object store, on real bubblewrap sandboxes: each park keeps its own object (two parks of
// identical workspaces share an address, and one's resume or close must not delete the other's), and a store
// that does not answer refuses the park 503 storage_unavailable with nothing changed and nothing left behind.
import type { Driver } from '@everdict/placement';
import type { ObjectBackend } from '@everdict/trajectory-store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Json, type SessionTestApp, sandboxRuns, sessionTestApp } from '../../test/sessions.js';
import { errorToProblem } from '../http/problem.js';
import { call } from '../http/testing/harness.js';
import type { Principal } from '../services/types.js';
import { suspendSession } from './park.js';
import type { SessionCore } from './service.js';
import { objectSnapshots } from './snapshots.js';

let t: SessionTestApp;
let key: string;
let principal: Principal;
let backend: ObjectBackend;
let core: SessionCore;
beforeAll(async () => {
  t = await sessionTestApp({ sweep: false });
  key = await t.tenant('parkstore');
  principal = await t.core.services.auth.authenticate(key);
  backend = t.core.trajectories?.store.backend as ObjectBackend;
  core = t.core.sessions?.service.core as SessionCore;
}, 240_000);
afterAll(async () => {
  await t?.close();
});

const api = (method: string, p: string, body?: unknown) =>
  call(t.app, method, p, { key, ...(body === undefined ? {} : { body }) });
const record = async (id: string) => (await api('GET', `/runs/${id}/record`)).body as Json;
const snapshotObjects = async () => {
  const out: string[] = [];
  for await (const o of backend.list('parkstore', 'sessions/snapshots/')) out.push(o.path);
  return out;
};

/** `target` with one method replaced (the rest bound to it, private fields and all). */
function replacing<T extends object>(target: T, name: string, fn: unknown): T {
  return new Proxy(target, {
    get(obj, prop) {
      if (prop === name) return fn;
      const v = Reflect.get(obj, prop, obj) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(obj) : v;
    },
  });
}

async function openWith(content: string): Promise<string> {
  const r = await api('POST', '/sandboxes', { ttlSec: 600, idleTimeoutSec: 600 });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  const id = (r.body.run as { id: string }).id;
  const w = await api('POST', `/sandboxes/${id}/exec`, {
    command: ['sh', '-c', `printf %s '${content}' > note.txt`],
  });
  expect(w.body.exitCode, JSON.stringify(w.body)).toBe(0);
  return id;
}

describe('image park storage', () => {
  it('two parks of identical workspaces keep their own snapshots: resuming or closing one leaves the other resumable', async () => {
    const a = await openWith('same bytes');
    const b = await openWith('same bytes');
    const c = await openWith('same bytes');
    for (const id of [a, b, c]) expect((await api('POST', `/sandboxes/${id}/suspend`)).status).toBe(200);
    const snap = async (id: string) => (await api('GET', `/sandboxes/${id}`)).body.snapshot as string;
    // One address for the three parks (the deterministic tar of identical files): the case that collided.
    expect(await snap(b)).toBe(await snap(a));
    expect(await snap(c)).toBe(await snap(a));

    expect((await api('POST', `/sandboxes/${a}/resume`, {})).status).toBe(200); // deletes a's object
    expect((await api('POST', `/sandboxes/${c}/close`)).status).toBe(200); // deletes c's object
    const resumed = await api('POST', `/sandboxes/${b}/resume`, {});
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    const read = await api('POST', `/sandboxes/${b}/exec`, { command: ['cat', 'note.txt'] });
    expect(read.body.stdout).toBe('same bytes');
    for (const id of [a, b]) expect((await api('POST', `/sandboxes/${id}/close`)).status).toBe(200);
    expect(await snapshotObjects()).toEqual([]);
  }, 120_000);

  it('a park whose snapshot upload fails is 503 storage_unavailable and changes nothing', async () => {
    const id = await openWith('kept open');
    const before = await record(id);
    const runBefore = (await api('GET', `/runs/${id}`)).body as Json;
    const down = replacing(backend, 'put', async () => {
      throw new Error('EIO: the bucket does not answer');
    });
    const refused = await suspendSession({ ...core, snapshots: objectSnapshots(down) }, principal, id).then(
      () => null,
      (e: unknown) => e,
    );
    const { problem } = errorToProblem(refused);
    expect(problem.status, JSON.stringify(problem)).toBe(503);
    expect(problem).toMatchObject({ code: 'storage_unavailable', reason: 'snapshot_unavailable' });

    expect(await record(id)).toEqual(before);
    const runAfter = (await api('GET', `/runs/${id}`)).body as Json;
    expect(runAfter.status).toBe('running');
    expect(runAfter.updatedAt).toBe(runBefore.updatedAt);
    expect(sandboxRuns(t.stateDir)).toContain(id); // the compute kept
    const still = await api('POST', `/sandboxes/${id}/exec`, { command: ['cat', 'note.txt'] });
    expect(still.body.stdout).toBe('kept open');
    expect(await snapshotObjects()).toEqual([]);
    expect((await api('POST', `/sandboxes/${id}/close`)).status).toBe(200);
  }, 120_000);

  it('a park refused after its upload (the compute cannot be released) leaves no object behind', async () => {
    const id = await openWith('refused late');
    const before = await record(id);
    const embedded = core.compute as { holder: string; driver: Driver };
    const stuck = replacing(embedded.driver, 'dispose', async () => {
      throw new Error('the sandbox could not be released');
    });
    const refused = await suspendSession(
      { ...core, compute: { holder: embedded.holder, driver: stuck } },
      principal,
      id,
    ).then(
      () => null,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(Error);
    expect(await record(id)).toEqual(before);
    expect(((await api('GET', `/sandboxes/${id}`)).body as Json).state).toBe('open');
    expect(await snapshotObjects()).toEqual([]);
    expect((await api('POST', `/sandboxes/${id}/close`)).status).toBe(200);
  }, 120_000);
});
