// run-model's schema refusals reach the client with zod's own issue codes (never a blanket `invalid_input`),
// through the one mapping (services/boundary.ts `validationRefusal`): a session held open past
// MAX_SESSION_TTL_SEC on POST /runs is `400 out_of_range` naming the body field the client sent — `ttlSec`
// (the edge's check, as a subscription's session template is refused) or `expiresAt` (run-model's bound when
// the run is built) — and nothing is created; a malformed transition event names its fields with zod's codes.
// On the real core (PGlite), through the HTTP app.
import { MAX_SESSION_TTL_SEC, type RunEvent } from '@everdict/run-model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTx } from '../db/tx.js';
import { errorToProblem, ProblemSchema } from '../http/problem.js';
import { COMMAND_SPEC, call, type TestApp, testApp } from '../http/testing/harness.js';
import { transitionTx } from './lifecycle.js';

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

const session = (extra: Record<string, unknown>) => ({
  kind: 'sandbox',
  subject: { image: 'alpine:3.20' },
  lifetime: 'session',
  ...extra,
});

const HELD_AT_MOST = `a session is held open at most ${MAX_SESSION_TTL_SEC} seconds (366 days)`;

async function runRows(): Promise<number> {
  const r = await t.core.internals.deps.db
    .selectFrom('runs')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

async function outOfRange(body: unknown): Promise<{ detail: string; issues: Issue[] }> {
  const r = await call(t.app, 'POST', '/runs', { body });
  const where = JSON.stringify(r.body);
  expect(r.status, where).toBe(400);
  expect(r.body.code, where).toBe('out_of_range');
  expect(ProblemSchema.safeParse(r.body).success, where).toBe(true);
  expect(r.body, where).not.toHaveProperty('details');
  return r.body as { detail: string; issues: Issue[] };
}

describe('run-model’s refusals keep their issue codes', { timeout: 120_000 }, () => {
  it('POST /runs: a session ttlSec past MAX_SESSION_TTL_SEC → out_of_range, body field ttlSec', async () => {
    const before = await runRows();
    for (const ttlSec of [MAX_SESSION_TTL_SEC + 1, 400 * 86_400, 2 ** 31 - 1]) {
      const p = await outOfRange(session({ ttlSec }));
      expect(p.issues).toEqual([
        { code: 'too_big', path: ['ttlSec'], in: 'body', message: `Too big: ${HELD_AT_MOST}` },
      ]);
      expect(p.detail).toBe(`body field "ttlSec": Too big: ${HELD_AT_MOST}`);
    }
    expect(await runRows()).toBe(before);
  });

  it('POST /runs: a session expiresAt past MAX_SESSION_TTL_SEC → out_of_range, body field expiresAt', async () => {
    const before = await runRows();
    const expiresAt = new Date(Date.now() + (MAX_SESSION_TTL_SEC + 86_400) * 1000).toISOString();
    const p = await outOfRange(session({ expiresAt }));
    // run-model's own issue (its bound relative to the run's birth), with its code: no `invalid_input`.
    expect(p.issues).toEqual([{ code: 'custom', path: ['expiresAt'], in: 'body', message: HELD_AT_MOST }]);
    expect(p.detail).toBe(`body field "expiresAt": ${HELD_AT_MOST}`);
    expect(await runRows()).toBe(before);
  });

  it('a malformed transition event: its fields with zod’s codes', async () => {
    const r = await call(t.app, 'POST', '/runs', { body: COMMAND_SPEC });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const runId = (r.body.run as { id: string }).id;
    const deps = t.core.internals.deps;
    const malformed = { type: 'fail', error: { code: '', message: 'x', extra: 1 } } as unknown as RunEvent;
    const e = await withTx(deps.db, (tx) => transitionTx(tx, deps, 'default', runId, malformed)).then(
      () => null,
      (err: unknown) => err,
    );
    const p = errorToProblem(e).problem;
    expect(p.code).toBe('validation_failed');
    expect(p.issues).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ code: 'too_small', path: ['error', 'code'] }),
        expect.objectContaining({ code: 'unrecognized_keys', path: ['error'] }),
      ]),
    );
    expect(p.issues?.some((i) => i.code === 'invalid_input')).toBe(false);
  });
});
