// A schema refusal raised in the service layer (run-model's Subscription as every firing reads it, the
// lifecycle's parse of a run spec) reaches the client exactly as the HTTP edge's validators answer one: the same problem members
// (top-level `issues` of `{code, path, message, in}`, a `detail` naming the first field, no `details`), the
// same codes (`validation_failed`, `out_of_range`) and status. One mapping: services/boundary.ts
// `validationRefusal`. On the real core (PGlite), through the HTTP app.
import { MAX_SESSION_TTL_SEC } from '@everdict/run-model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProblemSchema } from '../http/problem.js';
import { call, type TestApp, testApp } from '../http/testing/harness.js';

type CallResult = Awaited<ReturnType<typeof call>>;

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
}, 300_000); // a PGlite template is made per file: minutes on a loaded 2-core machine
afterAll(async () => {
  await t?.close();
});

interface Issue {
  code: string;
  path: (string | number)[];
  message: string;
  in?: string;
}

const session = (ttlSec?: number) => ({
  kind: 'sandbox',
  subject: { image: 'alpine:3.20' },
  lifetime: 'session',
  ...(ttlSec === undefined ? {} : { ttlSec }),
});

/** The members of the edge's own schema refusal (a query parameter the route's validator refuses). */
let edgeMembers: string[] = [];
beforeAll(async () => {
  const edge = await call(t.app, 'GET', '/runs?limit=abc');
  expect(edge.status).toBe(400);
  edgeMembers = Object.keys(edge.body).sort();
  expect(edgeMembers).toEqual(['code', 'detail', 'issues', 'status', 'title', 'type']);
});

/** A 400 schema refusal in the edge's shape: the same members, problem+json, the documented Problem. */
function asEdgeRefusal(r: CallResult, code: 'validation_failed' | 'out_of_range') {
  const where = JSON.stringify(r.body);
  expect(r.status, where).toBe(400);
  expect(r.type).toBe('application/problem+json');
  expect(r.body, where).toMatchObject({ code, status: 400, type: `urn:everdict:problem:${code}` });
  expect(Object.keys(r.body).sort(), where).toEqual(edgeMembers);
  expect(ProblemSchema.safeParse(r.body).success, where).toBe(true);
  return r.body as { detail: string; issues: Issue[] };
}

async function subscriptionRows(): Promise<number> {
  const r = await t.core.internals.deps.db
    .selectFrom('subscriptions')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

describe("a service's schema refusal answers as the edge's", { timeout: 120_000 }, () => {
  it('a subscription’s session TTL past the maximum: out_of_range, the body field runSpec.ttlSec', async () => {
    const before = await subscriptionRows();
    const r = await call(t.app, 'POST', '/subscriptions', {
      body: { name: 's', selector: { kind: 'run.queued' }, runSpec: session(MAX_SESSION_TTL_SEC + 1) },
    });
    const p = asEdgeRefusal(r, 'out_of_range');
    expect(p.issues).toEqual([
      {
        code: 'too_big',
        path: ['runSpec', 'ttlSec'],
        in: 'body',
        message: `Too big: a session is held open at most ${MAX_SESSION_TTL_SEC} seconds (366 days)`,
      },
    ]);
    expect(p.detail).toBe(`body field "runSpec.ttlSec": ${p.issues[0]?.message}`);
    expect(await subscriptionRows()).toBe(before);
  });

  it('a subscription’s session without a TTL: validation_failed, the body field runSpec.ttlSec', async () => {
    const r = await call(t.app, 'POST', '/subscriptions', {
      body: { name: 's', selector: { kind: 'run.queued' }, runSpec: session() },
    });
    const p = asEdgeRefusal(r, 'validation_failed');
    expect(p.issues).toEqual([
      expect.objectContaining({ code: 'custom', path: ['runSpec', 'ttlSec'], in: 'body' }),
    ]);
    expect(p.issues[0]?.message).not.toMatch(/sessionTtlMs/);
    expect(p.detail).toMatch(/^body field "runSpec\.ttlSec": .*ttlSec/);
  });

  it('a run subject run-model’s spec refuses (the edge takes any subject): validation_failed, body field', async () => {
    const r = await call(t.app, 'POST', '/runs', {
      body: { kind: 'command', subject: { path: 'x', image: 'alpine:3.20' } },
    });
    const p = asEdgeRefusal(r, 'validation_failed');
    expect(p.issues).toContainEqual(
      expect.objectContaining({ code: 'invalid_type', path: ['subject', 'command'], in: 'body' }),
    );
    expect(p.detail).toMatch(/^body field "subject\.command": /);
  });
});
