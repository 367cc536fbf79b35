// The record tells the truth (issue 8): the control plane signs its own inline intervals with its own
// Ed25519 key (GET /keys), serves each record with its attestation bundle, reports runrecord's cost and
// signers on read, and a record fetched over HTTP verifies offline with the BUILT runrecord CLI trusting
// only that key — while any edited attestation field fails with the spec's code. Real core (PGlite).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { verifyWire } from '@everdict/runrecord';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type TestApp, testApp } from './testing/harness.js';

const CLI = fileURLToPath(new URL('../../../../packages/runrecord/dist/cli.js', import.meta.url));

function cliVerify(wire: unknown, trustKeys: string[]) {
  const args = [CLI, 'verify', ...trustKeys.flatMap((k) => ['--trust-key', k])];
  const r = spawnSync(process.execPath, args, { input: JSON.stringify(wire), encoding: 'utf8' });
  return { status: r.status, out: JSON.parse(r.stdout) as Record<string, unknown> };
}

let t: TestApp;
beforeAll(async () => {
  // turbo builds runrecord before this package's tests (`test` dependsOn `^build`).
  expect(existsSync(CLI), `${CLI}: build @everdict/runrecord first`).toBe(true);
  t = await testApp({ scheduler: { enabled: true, pollMs: 25, inlineTimeoutMs: 600_000 }, executors: [] });
}, 120_000);
afterAll(async () => {
  await t?.close();
});

async function finishedAnalysis(): Promise<string> {
  const created = await call(t.app, 'POST', '/runs', {
    body: { kind: 'analysis', subject: { config: { fn: 'echo', message: 'signed' } } },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const id = (created.body.run as { id: string }).id;
  for (let i = 0; ; i++) {
    const r = await call(t.app, 'GET', `/runs/${id}`);
    if (r.body.status === 'succeeded') return id;
    expect(i, `run ${id} still ${String(r.body.status)}`).toBeLessThan(2_000);
    await new Promise((res) => setTimeout(res, 25));
  }
}

describe('the control plane signs its inline intervals', () => {
  it('GET /keys lists its Ed25519 public key (unauthenticated)', async () => {
    const r = await call(t.app, 'GET', '/keys', { key: null });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      keys: [{ kind: 'control-plane', id: 'control-plane', key: t.core.keys.signer.publicKey }],
    });
    expect(t.core.keys.signer.publicKey).toMatch(/^[0-9a-f]{64}$/);
  });

  it('an analysis record over HTTP: bundle, cost, signer, empty account; verifies offline with --trust-key', async () => {
    const id = await finishedAnalysis();
    const key = ((await call(t.app, 'GET', '/keys', { key: null })).body.keys as { key: string }[])[0]!.key;
    const rec = await call(t.app, 'GET', `/runs/${id}/record`);
    expect(rec.status).toBe(200);
    const verify = rec.body.verify as Record<string, unknown>;
    expect(verify).toMatchObject({ ok: true, phase: 'closed', account: 'non_blocking', signedBy: [key] });
    const cost = verify.cost as { activeUj: string; idleUj: string; totalUj: string; unresolved: number };
    expect(cost.unresolved).toBe(0);
    expect(BigInt(cost.activeUj)).toBeGreaterThan(0n);
    expect(BigInt(cost.totalUj)).toBe(BigInt(cost.activeUj) + BigInt(cost.idleUj));

    const wire = (await call(t.app, 'GET', `/runs/${id}/record?view=wire`)).body as {
      segments: { kind: string; attestation?: string; account?: unknown }[];
      attestations: Record<string, Record<string, unknown>>;
    };
    const executed = wire.segments.filter((s) => s.kind === 'executed');
    expect(executed).toHaveLength(1);
    // Inline analysis dispatched nothing, and said so.
    expect(executed[0]!.account).toEqual({ dispatched: [], resolved: [] });
    expect(Object.keys(wire.attestations)).toEqual([executed[0]!.attestation]);

    const ok = cliVerify(wire, [key]);
    expect(ok.status, JSON.stringify(ok.out)).toBe(0);
    expect(ok.out).toMatchObject({ ok: true, signed_by: [key], cost: { unresolved: 0 } });
    // The same, in-process, with runrecord's strict verifier.
    expect(verifyWire(wire, { trustKeys: [key] }).ok).toBe(true);

    // Trusting another key: UntrustedAttestation at the executed segment.
    const other = 'ab'.repeat(32);
    const untrusted = cliVerify(wire, [t.core.keys.signer.publicKey === other ? 'cd'.repeat(32) : other]);
    expect(untrusted.out).toMatchObject({ ok: false, error: 'UntrustedAttestation' });

    // Any edited attestation field fails with the spec's code.
    const address = executed[0]!.attestation!;
    const edits: [string, (a: Record<string, unknown>) => void, string][] = [
      ['active_uj', (a) => (a.active_uj = '1'), 'AttestationMismatch'],
      ['ended_ms', (a) => (a.ended_ms = String(BigInt(a.ended_ms as string) + 1n)), 'AttestationMismatch'],
      ['meter', (a) => (a.meter = 'rapl'), 'AttestationMismatch'],
      ['outcome', (a) => (a.outcome = 'failed'), 'AttestationMismatch'],
      ['exit_code', (a) => (a.exit_code = 7), 'AttestationMismatch'],
      ['provenance', (a) => (a.provenance = 'measured'), 'AttestationMismatch'],
      [
        'signature',
        (a) => {
          const s = a.signature as { sig: string };
          a.signature = { ...s, sig: (s.sig[0] === '0' ? '1' : '0') + s.sig.slice(1) };
        },
        'BadSignature',
      ],
      ['unsigned', (a) => delete a.signature, 'UntrustedAttestation'],
    ];
    for (const [field, edit, code] of edits) {
      const copy = structuredClone(wire);
      edit(copy.attestations[address]!);
      const r = cliVerify(copy, [key]);
      expect(r.status, field).toBe(1);
      expect(r.out, field).toMatchObject({ ok: false, error: code });
    }
  });
});

describe('nothing admitted that can never run (no runner registered)', () => {
  const cmd = { kind: 'command', subject: { path: 'x', image: 'alpine:3.20', command: ['true'] } };

  it('POST /runs: command, eval, sandbox (session too) → 422 no_placement naming kind and placement; nothing saved', async () => {
    const before = (await call(t.app, 'GET', '/runs?limit=200')).body.items as unknown[];
    for (const body of [
      cmd,
      { kind: 'eval', subject: { suite: 's', dataset: 'd' } },
      { kind: 'sandbox', subject: { image: 'alpine:3.20' }, lifetime: 'session' },
      { ...cmd, placement: { where: 'inline', isolation: 'none' } },
    ]) {
      const r = await call(t.app, 'POST', '/runs', { body });
      if (r.status === 400) continue; // a spec the schema refuses first (e.g. an eval subject shape)
      expect(r.status, JSON.stringify(r.body)).toBe(422);
      expect(r.type).toBe('application/problem+json');
      expect(r.body).toMatchObject({ code: 'no_placement', details: { kind: body.kind } });
      expect((r.body.details as { placement: { where: string } }).placement.where).toBeTypeOf('string');
    }
    const after = (await call(t.app, 'GET', '/runs?limit=200')).body.items as unknown[];
    expect(after).toHaveLength(before.length);
  });

  it('groups (batch) and subscriptions refuse the same way; nothing saved', async () => {
    const groupsBefore = (await call(t.app, 'GET', '/groups')).body;
    const g = await call(t.app, 'POST', '/groups', {
      body: { kind: 'batch', label: 'b', spec: cmd, cases: [{}, {}] },
    });
    expect(g.status, JSON.stringify(g.body)).toBe(422);
    expect(g.body).toMatchObject({ code: 'no_placement', details: { kind: 'command' } });
    expect((await call(t.app, 'GET', '/groups')).body).toEqual(groupsBefore);

    const s = await call(t.app, 'POST', '/subscriptions', {
      body: { name: 'never', selector: { kind: 'run.settled', filter: {} }, runSpec: cmd },
    });
    expect(s.status, JSON.stringify(s.body)).toBe(422);
    expect(s.body).toMatchObject({ code: 'no_placement' });
  });
});

describe('cancelling a running run stops its execution', () => {
  it('aborts the inline executor (a 60 s analysis ends long before its time), not only its settle', async () => {
    const dispatch = t.core.internals.dispatch!;
    const created = await call(t.app, 'POST', '/runs', {
      body: { kind: 'analysis', subject: { config: { fn: 'sleep', ms: 60_000 } } },
    });
    const id = (created.body.run as { id: string }).id;
    const deadline = Date.now() + 45_000; // a hang guard well under the analysis' 60 s
    while (
      (await call(t.app, 'GET', `/runs/${id}`)).body.status !== 'running' ||
      dispatch.executingCount === 0
    ) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 25));
    }
    const cancelled = await call(t.app, 'POST', `/runs/${id}/cancel`, { body: { reason: 'stop it' } });
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    while (dispatch.executingCount > 0) {
      expect(Date.now(), 'the execution was not aborted').toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 25));
    }
    const run = await call(t.app, 'GET', `/runs/${id}`);
    expect(run.body.status).toBe('cancelled');
    const rec = await call(t.app, 'GET', `/runs/${id}/record`);
    expect(rec.body.verify).toMatchObject({ ok: true, phase: 'closed' });
  }, 120_000);
});
