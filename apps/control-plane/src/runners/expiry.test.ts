// A command run whose expiry (`ttlSec`) passed while it waited is not leased to a runner: the grant that claims it
// fails it `expired` in the same transaction — no executed interval (nothing ran), no exit code, the record
// closed — and leases the live runs beside it as usual. On the real core (PGlite).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventually } from '../../test/core.js';
import { ADMIN_KEY, call, commandRun, type TestApp, testApp } from '../http/testing/harness.js';
import { leaseRuns, pairTestRunner } from '../http/testing/runners.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ executors: [] });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const create = (spec: Record<string, unknown>) => commandRun(t.app, spec);

it('a run past its expiry when a runner asks is failed `expired`, not leased; the live one beside it is', async () => {
  // Paired first (a run no runner could take is refused at creation), it asks only once the expiry passed.
  const runner = await pairTestRunner(t.app, {
    capabilities: { drivers: ['process'], kinds: ['command'], images: ['default'], slots: 2 },
  });
  const expiring = await create({ ttlSec: 1 });
  const live = await create({});
  const expiresAt = Date.parse(expiring.expiresAt ?? '');
  await eventually(async () => (Date.now() > expiresAt ? true : undefined)); // no runner meanwhile
  const leases = await leaseRuns(t.app, runner, 2);
  expect(leases.map((l) => l.runId)).toEqual([live.id]);

  const run = (await call(t.app, 'GET', `/runs/${expiring.id}`, { key: ADMIN_KEY })).body;
  expect(run).toMatchObject({
    status: 'failed',
    error: { code: 'expired', retryable: false },
    outputs: { summary: `its TTL ran out before it started (expiresAt ${expiring.expiresAt})` },
  });
  expect((run.outputs as { exitCode?: number }).exitCode).toBeUndefined();
  const rec = (await call(t.app, 'GET', `/runs/${expiring.id}/record`, { key: ADMIN_KEY })).body;
  expect(rec.verify).toMatchObject({ ok: true });
  expect((rec.wire as { segments: { kind: string }[] }).segments.map((s) => s.kind)).toEqual(['closed']);
  // Its lease and slot are released: the runner holds one lease, the tenant runs one.
  const again = await leaseRuns(t.app, runner, 2);
  expect(again).toEqual([]);
});
