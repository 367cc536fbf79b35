// A run's record ids are addresses of canonical JSON (run-model's canonicalJson, RFC 8785): a function of the
// run alone, so anyone holding the run as GET /runs/:id returns it recomputes its genesis head — whatever key
// order the client sent and whatever order jsonb gave back. And a run an older control plane parked under the
// pre-canonical manifest address still resumes. On the real core (PGlite), over HTTP.

import { canonicalJson } from '@everdict/run-model';
import { blake3, bytesToHex, genesisHead } from '@everdict/runrecord';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, callInternal, type TestApp, testApp } from '../http/testing/harness.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const utf8 = new TextEncoder();
const address = (text: string) => bytesToHex(blake3(utf8.encode(text)));
const TRANSCRIPT = 'ab'.repeat(32);

type RunBody = Record<string, unknown> & { id: string; record: { head: string; length: number } };

async function create(body: string): Promise<RunBody> {
  const created = await call(t.app, 'POST', '/runs', { body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const id = (created.body.run as { id: string }).id;
  return (await call(t.app, 'GET', `/runs/${id}`)).body as RunBody;
}

/** The genesis head as the README states it, computed from the run as returned, without the control plane's code. */
function genesisOf(run: RunBody): string {
  const unitId = address(
    canonicalJson({ unit: 'everdict.run/1', tenant: run.tenant, kind: run.kind, subject: run.subject }),
  );
  const grantsId = address(
    canonicalJson({
      grants: 'everdict.grants/1',
      placement: run.placement,
      attach: run.attach,
      envelope: run.envelope ?? null,
    }),
  );
  return genesisHead(unitId, grantsId);
}

describe('record ids are canonical', () => {
  it('the same subject in any key order opens the same genesis head, recomputable from GET /runs/:id', async () => {
    const a = await create(
      '{"kind":"analysis","subject":{"config":{"zeta":1,"alpha":{"y":[{"b":2,"a":1}],"x":"é"},"tag":"t"}}}',
    );
    const b = await create(
      '{"subject":{"config":{"tag":"t","alpha":{"x":"é","y":[{"a":1,"b":2}]},"zeta":1}},"kind":"analysis"}',
    );
    expect(a.record.length).toBe(0);
    expect(a.record.head).toBe(b.record.head);
    expect(genesisOf(a)).toBe(a.record.head);
    expect(genesisOf(b)).toBe(b.record.head);
    // A different subject is a different unit.
    const c = await create('{"kind":"analysis","subject":{"config":{"zeta":2,"tag":"t"}}}');
    expect(c.record.head).not.toBe(a.record.head);
    expect(genesisOf(c)).toBe(c.record.head);
  });
});

describe('the run’s own manifest on park and resume', () => {
  async function bridge(body: Record<string, unknown>) {
    const res = await callInternal(t.app, 'POST', '/internal/agent-run-events', body);
    return res;
  }
  async function startedAgent(): Promise<RunBody> {
    // model and conversationId: a subject whose key order as read back is not sorted, so the two encodings differ.
    const res = await bridge({
      event: 'started',
      agent: { agentId: 'helper', model: 'm-1', conversationId: 'conv-1' },
    });
    expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
    return (await call(t.app, 'GET', `/runs/${(res.body as { id: string }).id}`)).body as RunBody;
  }
  async function wireSegments(runId: string): Promise<Array<{ kind: string; manifest?: string }>> {
    const rec = await call(t.app, 'GET', `/runs/${runId}/record`);
    expect((rec.body.verify as { ok: boolean }).ok).toBe(true);
    return (rec.body.wire as { segments: Array<{ kind: string; manifest?: string }> }).segments;
  }
  const canonicalManifest = (run: RunBody) =>
    address(canonicalJson({ manifest: run.kind, subject: run.subject }));
  const legacyManifest = (run: RunBody) =>
    address(JSON.stringify({ manifest: run.kind, subject: run.subject }));

  it('a park that names none records the canonical address of {manifest: kind, subject}; the resume matches', async () => {
    const run = await startedAgent();
    expect((await bridge({ runId: run.id, event: 'suspended', transcript: TRANSCRIPT })).status).toBe(200);
    expect((await wireSegments(run.id)).at(-1)?.manifest).toBe(canonicalManifest(run));
    const resumed = await bridge({ runId: run.id, event: 'resumed', transcript: TRANSCRIPT });
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    expect((await wireSegments(run.id)).at(-1)).toMatchObject({
      kind: 'resumed',
      manifest: canonicalManifest(run),
    });
  });

  it('a run parked under the pre-canonical address (an older control plane) resumes under it', async () => {
    const run = await startedAgent();
    const legacy = legacyManifest(run);
    expect(legacy).not.toBe(canonicalManifest(run)); // the case is real: the two encodings differ here
    // What an older control plane wrote when the park named no manifest.
    await bridge({ runId: run.id, event: 'suspended', transcript: TRANSCRIPT, manifest: legacy });
    const resumed = await bridge({ runId: run.id, event: 'resumed', transcript: TRANSCRIPT });
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    expect((await wireSegments(run.id)).at(-1)).toMatchObject({ kind: 'resumed', manifest: legacy });
  });

  it('any other parked manifest still refuses a resume that names none (409 manifest_mismatch, nothing written)', async () => {
    const run = await startedAgent();
    await bridge({ runId: run.id, event: 'suspended', transcript: TRANSCRIPT, manifest: '12'.repeat(32) });
    const before = await wireSegments(run.id);
    const refused = await bridge({ runId: run.id, event: 'resumed', transcript: TRANSCRIPT });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'manifest_mismatch' });
    expect(await wireSegments(run.id)).toEqual(before);
  });
});
