// What a change of the host set does to the turns, on the real core (migrated PGlite) through the real app,
// each case in its own tenant (tenant-scoped hosts see only its turns):
//   - a revoke answers the fate of EVERY turn the host held: a running one `requeued`, a parked one leased
//     for its resume `parked` (its lost resume counted; still parked and ready);
//   - a decline bars its holder only while it presents the capability set it declined under: the same set
//     (or none, when it declared none) is not offered the turn again; a changed set is;
//   - a revoke re-checks the declined turns: with the last host that had not declined one gone, it fails
//     `no_compatible_host` (as a decline that leaves no host does).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  leaseTurns,
  pairAgentHost,
  parkReady,
  startAgentTurn,
  type TurnLease,
} from '../http/testing/agent-turns.js';
import { call, callInternal, type TestApp, testApp } from '../http/testing/harness.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const internal = (method: string, path: string, body?: unknown, tenant?: string) =>
  callInternal(t.app, method, path, body, tenant);
const lease = (holder: string, capabilities?: string[]) =>
  leaseTurns(t.app, holder, capabilities ? { capabilities } : {});

/**
 * The turn's first interval, by an unpaired holder (a paired host's report must carry its signed attestation):
 * it asks for approval and parks; the approval arrives (ready). Nothing else of any tenant may be queued.
 */
async function parkReadyAs(tenant: string, key: string, runId: string) {
  const holder = `u-${tenant}`;
  const [l] = await leaseTurns(t.app, holder, { free: 1 });
  expect(l?.runId).toBe(runId);
  if (!l) throw new Error('no lease');
  await parkReady(t.app, l, holder, { tenant, key });
}

const decline = (runId: string, holder: string, epoch: number, capabilities?: string[]) =>
  internal('POST', `/internal/agent/v1/runs/${runId}/decline`, {
    holder,
    epoch,
    reason: 'manifest_mismatch',
    ...(capabilities ? { capabilities } : {}),
  });
const runOf = async (key: string, id: string) => (await call(t.app, 'GET', `/runs/${id}`, { key })).body;

describe('revoking an agent host', () => {
  it('answers the fate of every turn it held: running → requeued, parked for its resume → parked', async () => {
    const TENANT = 'hc-revoke';
    const key = await t.tenant(TENANT);
    const host = await pairAgentHost(t.app, 'holder', key);
    const parkedTurn = await startAgentTurn(t.app, 'hc', key);
    await parkReadyAs(TENANT, key, parkedTurn);
    const runningTurn = await startAgentTurn(t.app, 'hc', key);
    const held = await lease(host);
    expect(held.map((l) => l.runId).sort()).toEqual([parkedTurn, runningTurn].sort());
    expect(await runOf(key, runningTurn)).toMatchObject({ status: 'running' });
    expect(await runOf(key, parkedTurn)).toMatchObject({ status: 'awaiting_input' });

    const revoked = await call(t.app, 'POST', `/agents/hosts/${host}/revoke`, { key });
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    // Before: only `requeued: [runningTurn]`; the parked turn (its lost resume counted) was not mentioned.
    expect(revoked.body).toMatchObject({
      state: 'revoked',
      requeued: [runningTurn],
      parked: [parkedTurn],
      failed: [],
      noCompatibleHost: [],
    });
    expect(
      (revoked.body.turns as { runId: string }[]).sort((a, b) => a.runId.localeCompare(b.runId)),
    ).toEqual(
      [
        { runId: runningTurn, outcome: 'requeued', status: 'queued' },
        { runId: parkedTurn, outcome: 'parked', status: 'awaiting_input' },
      ].sort((a, b) => a.runId.localeCompare(b.runId)),
    );
    expect(await runOf(key, runningTurn)).toMatchObject({ status: 'queued' });
    expect(await runOf(key, parkedTurn)).toMatchObject({ status: 'awaiting_input' });
    for (const id of [runningTurn, parkedTurn])
      expect((await call(t.app, 'POST', `/runs/${id}/cancel`, { key, body: {} })).status).toBeLessThan(300);
  });

  it('fails a declined turn no_compatible_host once the last host that had not declined it is revoked', async () => {
    const TENANT = 'hc-strand';
    const key = await t.tenant(TENANT);
    const decliner = await pairAgentHost(t.app, 'decliner', key);
    const other = await pairAgentHost(t.app, 'other', key);
    const turn = await startAgentTurn(t.app, 'hc', key);
    await parkReadyAs(TENANT, key, turn);
    const [resume] = await lease(decliner);
    expect(resume?.runId).toBe(turn);
    const declined = await decline(turn, decliner, (resume as TurnLease).epoch);
    expect(declined.body).toMatchObject({ outcome: 'requeued', declinedBy: [decliner] });

    const revoked = await call(t.app, 'POST', `/agents/hosts/${other}/revoke`, { key });
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    expect(revoked.body).toMatchObject({ turns: [], noCompatibleHost: [turn] });
    // Before: the turn stayed parked for ever — the only host left had declined it.
    const run = await runOf(key, turn);
    expect(run).toMatchObject({ status: 'failed', error: { code: 'no_compatible_host' } });
    expect((await call(t.app, 'GET', `/runs/${turn}/record`, { key })).body.verify).toMatchObject({
      phase: 'closed',
    });
  });
});

describe('a decline is keyed to the capability set its holder declined under', () => {
  it('the same set is not offered the turn again; a changed set is', async () => {
    const TENANT = 'hc-caps';
    const key = await t.tenant(TENANT);
    const host = await pairAgentHost(t.app, 'upgrading', key);
    const spare = await pairAgentHost(t.app, 'spare', key); // keeps a compatible host around: the decline requeues
    const turn = await startAgentTurn(t.app, 'hc', key);
    const v1 = ['everdict-agent/transcript/1'];
    await parkReadyAs(TENANT, key, turn);
    const [resume] = await lease(host, v1);
    expect(resume?.runId).toBe(turn);
    const declined = await decline(turn, host, (resume as TurnLease).epoch, v1);
    expect(declined.status, JSON.stringify(declined.body)).toBe(200);
    expect(declined.body).toMatchObject({ outcome: 'requeued' });

    // The same capability set (in any order, with repeats): still declined.
    expect(await lease(host, [...v1, ...v1])).toEqual([]);
    // Upgraded (a new protocol it can resume): offered again, at the next epoch.
    const upgraded = await lease(host, ['everdict-agent/transcript/2', ...v1]);
    expect(upgraded).toEqual([{ ...upgraded[0], runId: turn, epoch: (resume as TurnLease).epoch + 1 }]);

    // It declines again under the new set: that set is now barred too; none declared is a set of its own.
    expect(
      (await decline(turn, host, (resume as TurnLease).epoch + 1, ['everdict-agent/transcript/2', ...v1]))
        .body,
    ).toMatchObject({ outcome: 'requeued' });
    expect(await lease(host, ['everdict-agent/transcript/2', ...v1])).toEqual([]);
    const [bare] = await lease(host);
    expect(bare?.runId).toBe(turn);
    expect((await decline(turn, host, (bare as TurnLease).epoch)).body).toMatchObject({
      outcome: 'requeued',
    });
    expect(await lease(host)).toEqual([]);
    expect((await lease(spare)).map((l) => l.runId)).toEqual([turn]);

    const bad = await internal('POST', '/internal/agent/v1/leases', {
      holder: host,
      free: 1,
      capabilities: [''],
    });
    expect(bad.status).toBe(400);
  });
});
