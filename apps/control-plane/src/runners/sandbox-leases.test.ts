// A runner that registered the kind `sandbox` (to hold session runs over its session channel: sessions/hub.ts)
// is never leased a sandbox run: its intervals execute command and eval runs only (the runner refuses any other
// lease), so a lease request claims those kinds alone (schemas.ts `leasedKinds`), and a sandbox run that is
// not a session is refused at the door (422 no_placement) instead of waiting queued for a lease never granted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type TestApp, testApp } from '../http/testing/harness.js';
import { leaseRuns, pairTestRunner } from '../http/testing/runners.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ executors: [] });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

describe('a runner registered for sandbox', () => {
  it('is leased its command runs; a sandbox run that is not a session is 422 no_placement', async () => {
    const runner = await pairTestRunner(t.app, {
      capabilities: { drivers: ['process'], kinds: ['command', 'sandbox'], images: ['default'], slots: 4 },
    });
    const sandbox = await call(t.app, 'POST', '/runs', {
      body: { kind: 'sandbox', subject: { image: 'default' } },
    });
    expect(sandbox.status, JSON.stringify(sandbox.body)).toBe(422);
    expect(sandbox.body.code).toBe('no_placement');
    const command = await call(t.app, 'POST', '/runs', {
      body: { kind: 'command', subject: { command: ['true'] } },
    });
    expect(command.status, JSON.stringify(command.body)).toBe(201);
    const leases = await leaseRuns(t.app, runner, 4);
    expect(leases.map((l) => l.runId)).toEqual([(command.body.run as { id: string }).id]);
    const runs = await call(t.app, 'GET', '/runs');
    expect((runs.body.items as { kind: string }[]).map((r) => r.kind)).toEqual(['command']);
  });
});
