// Trajectories on the real core (PGlite): run trajectory pages and the SSE tail (tenant-scoped, resumable),
// the seal at terminal status through the durable seal queue, refusal after the seal, OTLP import (JSON and
// protobuf) routed to live runs or materialized as imported trajectories, scoring, provenance after a restart.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TraceEvent } from '@everdict/run-model';
import protobuf from 'protobufjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type TestApp, testApp } from '../http/testing/harness.js';
import { agentTrace, otlpJson, otlpProtobuf, otlpProtobufNested, type SpanSpec } from './otlp-fixtures.js';

const cmd = { kind: 'command', subject: { path: 'x', image: 'alpine:3.20', command: ['true'] } };
const ts = '2026-12-01T10:00:00.000Z';
const events = (runId: string, from: number, n: number): TraceEvent[] =>
  Array.from({ length: n }, (_, i) => ({
    type: 'message' as const,
    seq: from + i,
    ts,
    runId,
    role: 'assistant' as const,
    content: `step ${from + i}`,
  }));

let t: TestApp;
let dataDir: string;
let otherKey: string;

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'cp-traj-test-'));
  t = await testApp({ dataDir });
  otherKey = await t.tenant('other');
}, 300_000);
afterAll(async () => {
  await t.close();
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

async function newRun(): Promise<string> {
  const r = await call(t.app, 'POST', '/runs', { body: cmd });
  expect(r.status).toBe(201);
  return (r.body.run as { id: string }).id;
}

/** Reads an SSE response until `end` (or `max` events): [{id, event, data}]. */
async function readSse(res: Response, max = 1_000) {
  const out: { id?: string; event?: string; data?: string }[] = [];
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let i = buf.indexOf('\n\n');
    while (i >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const msg: { id?: string; event?: string; data?: string } = {};
      for (const line of block.split('\n')) {
        const [k, ...rest] = line.split(':');
        const v = rest.join(':').trimStart();
        if (k === 'id') msg.id = v;
        else if (k === 'event') msg.event = v;
        else if (k === 'data') msg.data = v;
      }
      if (msg.event) out.push(msg);
      if (msg.event === 'end' || out.length >= max) {
        await reader.cancel();
        return out;
      }
      i = buf.indexOf('\n\n');
    }
  }
  return out;
}

describe('run trajectories over HTTP', { timeout: 120_000 }, () => {
  it('pages a live trajectory by offset; another tenant gets a 404', async () => {
    const runId = await newRun();
    const tr = t.core.trajectories!;
    await tr.append('default', runId, events(runId, 1, 5));
    const first = await call(t.app, 'GET', `/runs/${runId}/trajectory?offset=0&limit=3`);
    expect(first.status).toBe(200);
    expect((first.body.items as TraceEvent[]).map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(first.body.nextOffset).toBe(3);
    expect(first.body.sealed).toBe(false);
    const rest = await call(t.app, 'GET', `/runs/${runId}/trajectory?offset=3&limit=100`);
    expect((rest.body.items as TraceEvent[]).map((e) => e.seq)).toEqual([4, 5]);
    expect(rest.body.nextOffset).toBe(5);

    const foreign = await call(t.app, 'GET', `/runs/${runId}/trajectory`, { key: otherKey });
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe('not_found');
    const foreignStream = await t.app.request(`/runs/${runId}/trajectory/stream`, {
      headers: { authorization: `Bearer ${otherKey}` },
    });
    expect(foreignStream.status).toBe(404);
    await expect(tr.append('other', runId, events(runId, 6, 1))).rejects.toMatchObject({ code: 'not_found' });
    const bad = await call(t.app, 'GET', `/runs/${runId}/trajectory?offset=-1`);
    expect(bad.status).toBe(400);
  });

  it('seals at terminal status through the durable queue; appends after it are 409 trajectory_sealed', async () => {
    const runId = await newRun();
    const tr = t.core.trajectories!;
    await tr.append('default', runId, events(runId, 1, 3));
    expect((await call(t.app, 'POST', `/runs/${runId}/cancel`)).status).toBe(200);
    // The terminal transition queued the seal in its own transaction; nothing is sealed yet.
    expect(await t.core.trajectoryJobs!.pendingSeals()).toBeGreaterThanOrEqual(1);
    await expect(tr.append('default', runId, events(runId, 4, 1))).rejects.toMatchObject({
      code: 'trajectory_sealed',
      httpStatus: 409,
    });
    // A crashed replica's work is durable: a fresh pass (any replica) seals it.
    const pass = await t.core.trajectoryJobs!.sealDue();
    expect(pass.sealed).toBeGreaterThanOrEqual(1);
    expect(await t.core.trajectoryJobs!.pendingSeals()).toBe(0);
    const run = await call(t.app, 'GET', `/runs/${runId}`);
    const ref = run.body.trajectory as { ref: string; digest: string; eventCount: number };
    expect(ref.ref).toBe(runId);
    expect(ref.eventCount).toBe(3);
    expect(ref.digest).toMatch(/^blake3:[0-9a-f]{64}$/);
    const verified = await t.core.trajectories!.store.verify('default', runId, ref.digest);
    expect(verified.ok).toBe(true);
    const page = await call(t.app, 'GET', `/runs/${runId}/trajectory`);
    expect(page.body.sealed).toBe(true);
    expect((page.body.items as unknown[]).length).toBe(3);
    await expect(tr.append('default', runId, events(runId, 4, 1))).rejects.toMatchObject({
      code: 'trajectory_sealed',
    });
    // A run that recorded nothing claims no trajectory, and queues no seal (0013: only marked runs do).
    const quiet = await newRun();
    await call(t.app, 'POST', `/runs/${quiet}/cancel`);
    expect(await t.core.trajectoryJobs!.pendingSeals()).toBe(0);
    const p2 = await t.core.trajectoryJobs!.sealDue();
    expect(p2).toEqual({ sealed: 0, empty: 0, failed: 0 });
    expect((await call(t.app, 'GET', `/runs/${quiet}`)).body.trajectory).toBeUndefined();
  });

  it('tails over SSE (id = offset), resumes after Last-Event-ID, and ends once sealed', async () => {
    const runId = await newRun();
    const tr = t.core.trajectories!;
    await tr.append('default', runId, events(runId, 1, 2));
    const res = await t.app.request(`/runs/${runId}/trajectory/stream`, {
      headers: { authorization: `Bearer ${await t.key('admin')}`, accept: 'text/event-stream' },
    });
    expect(res.status).toBe(200);
    const reading = readSse(res);
    await tr.append('default', runId, events(runId, 3, 2));
    await call(t.app, 'POST', `/runs/${runId}/cancel`);
    await t.core.trajectoryJobs!.sealDue();
    const got = await reading;
    const data = got.filter((m) => m.event === 'trajectory.event');
    expect(data.map((m) => m.id)).toEqual(['0', '1', '2', '3']);
    expect(data.map((m) => (JSON.parse(m.data!) as TraceEvent).seq)).toEqual([1, 2, 3, 4]);
    expect(got.at(-1)?.event).toBe('end');

    const resumed = await t.app.request(`/runs/${runId}/trajectory/stream`, {
      headers: {
        authorization: `Bearer ${await t.key('admin')}`,
        accept: 'text/event-stream',
        'last-event-id': '1',
      },
    });
    const again = (await readSse(resumed)).filter((m) => m.event === 'trajectory.event');
    expect(again.map((m) => m.id)).toEqual(['2', '3']);

    const bounded = await t.app.request(`/runs/${runId}/trajectory/stream?limit=1`, {
      headers: { authorization: `Bearer ${await t.key('admin')}`, accept: 'text/event-stream' },
    });
    const asPage = await call(t.app, 'GET', `/runs/${runId}/trajectory/stream?offset=3`);
    expect((asPage.body.items as TraceEvent[]).map((e) => e.seq)).toEqual([4]);
    const one = await readSse(bounded);
    expect(one.filter((m) => m.event === 'trajectory.event').map((m) => m.id)).toEqual(['0']);
    expect(JSON.parse(one.at(-1)!.data!)).toMatchObject({ status: 'limit' });
  });
});

describe('POST /v1/traces', { timeout: 300_000 }, () => {
  it('routes spans naming a live run to its trajectory, in JSON and protobuf alike', async () => {
    const runJson = await newRun();
    const runProto = await newRun();
    const spans = agentTrace('a'.repeat(32));
    const res = await t.app.request('/v1/traces', {
      method: 'POST',
      headers: { authorization: `Bearer ${await t.key('member')}`, 'content-type': 'application/json' },
      body: JSON.stringify(otlpJson(spans, { 'everdict.run_id': runJson })),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(await res.json()).toEqual({});
    const proto = await t.app.request('/v1/traces', {
      method: 'POST',
      headers: { authorization: `Bearer ${await t.key('member')}`, 'content-type': 'application/x-protobuf' },
      body: otlpProtobuf(spans, { 'everdict.run_id': runProto }),
    });
    expect(proto.status).toBe(200);
    expect(proto.headers.get('content-type')).toContain('application/x-protobuf');
    expect(new Uint8Array(await proto.arrayBuffer()).length).toBe(0); // an empty ExportTraceServiceResponse

    const a = (await call(t.app, 'GET', `/runs/${runJson}/trajectory`)).body.items as TraceEvent[];
    const b = (await call(t.app, 'GET', `/runs/${runProto}/trajectory`)).body.items as TraceEvent[];
    expect(a.length).toBeGreaterThan(1);
    expect(a.some((e) => e.type === 'llm_call')).toBe(true);
    const strip = (xs: TraceEvent[]) => xs.map(({ runId: _r, ...rest }) => rest);
    expect(strip(b)).toEqual(strip(a));
    // Re-sent (an exporter's retry): nothing is appended twice.
    await t.app.request('/v1/traces', {
      method: 'POST',
      headers: { authorization: `Bearer ${await t.key('member')}`, 'content-type': 'application/json' },
      body: JSON.stringify(otlpJson(spans, { 'everdict.run_id': runJson })),
    });
    expect(((await call(t.app, 'GET', `/runs/${runJson}/trajectory`)).body.items as unknown[]).length).toBe(
      a.length,
    );
  });

  it('refuses what is not OTLP with typed 4xx problems and no API key with a 401', async () => {
    const noKey = await t.app.request('/v1/traces', {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json' },
    });
    expect(noKey.status).toBe(401);
    const text = await call(t.app, 'POST', '/v1/traces', {
      body: 'x',
      headers: { 'content-type': 'text/plain' },
    });
    expect(text.status).toBe(415);
    expect(text.body.code).toBe('unsupported_media_type');
    const garbage = await t.app.request('/v1/traces', {
      method: 'POST',
      headers: { authorization: `Bearer ${await t.key('member')}`, 'content-type': 'application/x-protobuf' },
      body: new Uint8Array([0xff, 0xff, 0xff, 0x01, 0x02]),
    });
    expect(garbage.status).toBe(400);
    const badJson = await call(t.app, 'POST', '/v1/traces', { body: { resourceSpans: [{ scopeSpans: 7 }] } });
    expect(badJson.status).toBe(400);
  });

  it('imports spans of no live run as a trajectory per trace id, scores it, and keeps its provenance across a restart', async () => {
    const traceId = 'b'.repeat(32);
    const ended = await newRun();
    await call(t.app, 'POST', `/runs/${ended}/cancel`);
    const res = await call(t.app, 'POST', '/v1/traces', {
      body: otlpJson(agentTrace(traceId), { 'everdict.run_id': ended }),
    });
    expect(res.status).toBe(200);
    const list = await call(t.app, 'GET', `/trajectories?source=otlp&externalId=${traceId}`);
    expect(list.status).toBe(200);
    const items = list.body.items as {
      trajectoryId: string;
      provenance: Record<string, string>;
      digest: string;
    }[];
    expect(items).toHaveLength(1);
    const imported = items[0]!;
    expect(imported.provenance).toMatchObject({ source: 'otlp', externalId: traceId });
    // Not a run: spec §6, sync operations are edge operations.
    expect((await call(t.app, 'GET', `/runs/${imported.trajectoryId}`)).status).toBe(404);
    expect(
      (await call(t.app, 'GET', `/trajectories/${imported.trajectoryId}`, { key: otherKey })).status,
    ).toBe(404);

    const scored = await call(t.app, 'POST', `/trajectories/${imported.trajectoryId}/score`, {
      body: {
        graders: [
          { type: 'output_contains', name: 'fixed', text: 'tests pass' },
          { type: 'numeric_threshold', name: 'tokens', path: 'usage.inputTokens', max: 5000 },
        ],
      },
    });
    expect(scored.status).toBe(200);
    const scores = scored.body.scores as { grader: string; passed: boolean; value: number; digest: string }[];
    expect(scores.map((s) => [s.grader, s.passed])).toEqual([
      ['fixed', true],
      ['tokens', true],
    ]);
    expect(scores[1]!.value).toBe(1200);
    expect(scores[0]!.digest).toBe(imported.digest);
    const one = await call(t.app, 'GET', `/trajectories/${imported.trajectoryId}?limit=10`);
    expect(one.status).toBe(200);
    expect((one.body.trajectory as { scores: unknown[] }).scores).toHaveLength(2);
    expect((one.body.items as TraceEvent[]).some((e) => e.type === 'llm_call')).toBe(true);
    const badGrader = await call(t.app, 'POST', `/trajectories/${imported.trajectoryId}/score`, {
      body: { graders: [{ type: 'nope' }] },
    });
    expect(badGrader.status).toBe(400);

    // A restart: a new core and store over the same data directory see the same import, same provenance.
    const again = await testApp({ dataDir });
    try {
      const after = await call(again.app, 'GET', `/trajectories/${imported.trajectoryId}`);
      expect(after.status).toBe(200);
      const tr = after.body.trajectory as { provenance: unknown; digest: string };
      expect(tr.provenance).toEqual(imported.provenance);
      expect(tr.digest).toBe(imported.digest);
      const listed = await call(again.app, 'GET', `/trajectories?source=otlp&externalId=${traceId}`);
      expect((listed.body.items as unknown[]).length).toBe(1);
    } finally {
      await again.close();
    }
  });
});

describe('POST /v1/traces at the production body limit (1 MiB)', { timeout: 300_000 }, () => {
  let big: TestApp;
  beforeAll(async () => {
    big = await testApp({ maxBodyBytes: 1024 * 1024 });
  }, 300_000);
  afterAll(() => big.close(), 60_000);
  const traces = (body: unknown) => call(big.app, 'POST', '/v1/traces', { body });
  const base = 1_764_576_000_000_000_000n;

  describe('a refused request stores nothing', () => {
    /** A tool span whose call id is over run-model's 200-character Id: its events fail the schema. */
    const badTool = (traceId: string, at: bigint): SpanSpec => ({
      traceId,
      spanId: `${traceId.slice(0, 14)}ff`,
      name: 'execute_tool grep',
      startNs: at,
      endNs: at + 1_000_000n,
      attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.call.id': 'c'.repeat(201) },
    });
    /** Every imported trajectory's and import index entry's object. */
    async function importedObjects(): Promise<string[]> {
      const { backend } = big.core.trajectories!.store;
      const paths: string[] = [];
      for (const prefix of ['trajectories/imp_', 'imports/'])
        for await (const o of backend.list('default', prefix)) paths.push(o.path);
      return paths;
    }
    const merged = (...bodies: ReturnType<typeof otlpJson>[]) => ({
      resourceSpans: bodies.flatMap((b) => b.resourceSpans),
    });

    it('one invalid trace refuses the whole request: a valid trace and a live run get nothing', async () => {
      const created = await call(big.app, 'POST', '/runs', { body: cmd });
      const live = (created.body.run as { id: string }).id;
      const [x, y, routedTrace] = ['c1'.repeat(16), 'c2'.repeat(16), 'c3'.repeat(16)];
      const res = await traces(
        merged(
          otlpJson(agentTrace(x)),
          otlpJson(agentTrace(routedTrace), { 'everdict.run_id': live }),
          otlpJson([badTool(y, base)]),
        ),
      );
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('bad_request');
      expect(await importedObjects()).toEqual([]);
      const listed = await call(big.app, 'GET', `/trajectories?source=otlp&externalId=${x}`);
      expect(listed.body.items).toEqual([]);
      expect((await big.core.trajectories!.store.head('default', live)).eventCount).toBe(0);
    });

    it('a trace past one import batch (1,000 events) whose last event is invalid writes no meta and no chunk', async () => {
      const traceId = 'c4'.repeat(16);
      const plain: SpanSpec[] = Array.from({ length: 1_001 }, (_, i) => ({
        traceId,
        spanId: `${traceId.slice(0, 10)}${i.toString(16).padStart(6, '0')}`,
        name: 'work',
        startNs: base + BigInt(i) * 1_000n,
        endNs: base + BigInt(i) * 1_000n + 500n,
      }));
      const res = await traces(otlpJson([...plain, badTool(traceId, base + 10_000_000n)]));
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('bad_request');
      expect(await importedObjects()).toEqual([]);
    });
  });

  describe('attribute text nested past the stack', () => {
    const deep = `${'['.repeat(200_000)}${']'.repeat(200_000)}`;
    const span = (traceId: string, attributes: Record<string, string>): SpanSpec => ({
      traceId,
      spanId: `${traceId.slice(0, 14)}01`,
      name: 'span',
      startNs: base,
      endNs: base + 2_000_000n,
      attributes,
    });
    async function importedEvents(traceId: string): Promise<TraceEvent[]> {
      const listed = await call(big.app, 'GET', `/trajectories?source=otlp&externalId=${traceId}`);
      const [item] = listed.body.items as { trajectoryId: string }[];
      const one = await call(big.app, 'GET', `/trajectories/${item!.trajectoryId}?limit=10`);
      return one.body.items as TraceEvent[];
    }

    it('keeps a chat span’s over-deep gen_ai.input.messages as text (JSON body), not a 500', async () => {
      const traceId = 'd1'.repeat(16);
      const res = await traces(
        otlpJson([span(traceId, { 'gen_ai.operation.name': 'chat', 'gen_ai.input.messages': deep })]),
      );
      expect(res.status).toBe(200);
      const events = await importedEvents(traceId);
      expect(events.find((e) => e.type === 'message')).toMatchObject({ role: 'user', content: deep });
    });

    it('keeps a tool span’s over-deep arguments as text (protobuf body), not a 500', async () => {
      const traceId = 'd2'.repeat(16);
      const res = await big.app.request('/v1/traces', {
        method: 'POST',
        headers: {
          authorization: `Bearer ${await big.key('member')}`,
          'content-type': 'application/x-protobuf',
        },
        body: otlpProtobuf([
          span(traceId, { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.call.arguments': deep }),
        ]),
      });
      expect(res.status).toBe(200);
      const events = await importedEvents(traceId);
      expect(events.find((e) => e.type === 'tool_call')).toMatchObject({ input: deep });
    });
  });
  describe('protobuf AnyValue nested past the stack', () => {
    const post = async (body: Uint8Array) =>
      big.app.request('/v1/traces', {
        method: 'POST',
        headers: {
          authorization: `Bearer ${await big.key('member')}`,
          'content-type': 'application/x-protobuf',
        },
        body,
      });
    /** How deep `v` nests (objects and arrays), walked without recursion. */
    const depthOf = (v: unknown): number => {
      let depth = 0;
      for (let at = v; at && typeof at === 'object'; depth++)
        at = Array.isArray(at) ? at[0] : (at as Record<string, unknown>).k;
      return depth;
    };

    // protobufjs 8 refuses messages nested past its recursion limit (100, protoc's) while decoding: an AnyValue
    // reaches it at 32 kvlistValue or 48 arrayValue levels, below MAX_ATTRIBUTE_JSON_DEPTH (64).
    it.each([
      ['kvlist', 60_000],
      ['array', 100_000],
      ['kvlist', 65],
      ['array', 65],
    ] as const)(
      'refuses a %s AnyValue %i levels deep: 400 bad_request, nothing stored',
      async (shape, depth) => {
        const traceId = `${shape === 'kvlist' ? 'e1' : 'e2'}${String(depth).padStart(30, '0')}`;
        const res = await post(otlpProtobufNested(traceId, depth, shape));
        expect(res.status).toBe(400);
        expect(((await res.json()) as { code: string }).code).toBe('bad_request');
        const listed = await call(big.app, 'GET', `/trajectories?source=otlp&externalId=${traceId}`);
        expect(listed.body.items).toEqual([]);
      },
    );

    // protobufjs's limit is one process-wide setting (another library may raise it): the import's own bound is
    // MAX_ATTRIBUTE_JSON_DEPTH, walked without recursion before anything recurses (here a 500 before the bound).
    it('refuses past 64 levels where protobufjs’s recursion limit is raised; 64 levels import exact', async () => {
      const limits = [protobuf.util, protobuf.Reader] as unknown as { recursionLimit: number }[];
      const was = limits.map((l) => l.recursionLimit);
      try {
        for (const l of limits) l.recursionLimit = 1_000_000;
        for (const [shape, depth] of [
          ['kvlist', 1_000],
          ['array', 1_500],
          ['kvlist', 400],
          ['array', 700],
          ['kvlist', 65],
          ['array', 65],
        ] as const) {
          const res = await post(otlpProtobufNested(`e5${String(depth).padStart(30, '0')}`, depth, shape));
          expect(res.status, `${shape} ${depth}`).toBe(400);
          expect(((await res.json()) as { code: string }).code).toBe('bad_request');
        }
        for (const shape of ['kvlist', 'array'] as const) {
          const traceId = `${shape === 'kvlist' ? 'e6' : 'e7'}${'0'.repeat(28)}64`;
          expect((await post(otlpProtobufNested(traceId, 64, shape))).status).toBe(200);
          const listed = await call(big.app, 'GET', `/trajectories?source=otlp&externalId=${traceId}`);
          const [item] = listed.body.items as { trajectoryId: string }[];
          const one = await call(big.app, 'GET', `/trajectories/${item!.trajectoryId}`);
          const [span] = one.body.items as { data: { attributes: { deep: unknown } } }[];
          expect(depthOf(span!.data.attributes.deep)).toBe(64);
        }
      } finally {
        limits.forEach((l, i) => {
          l.recursionLimit = was[i]!;
        });
      }
    });

    it.each([
      ['kvlist', 31],
      ['array', 47],
    ] as const)(
      'imports a %s AnyValue at the deepest that decodes (%i levels), exact',
      async (shape, depth) => {
        const traceId = `${shape === 'kvlist' ? 'e3' : 'e4'}${String(depth).padStart(30, '0')}`;
        const res = await post(otlpProtobufNested(traceId, depth, shape));
        expect(res.status).toBe(200);
        const listed = await call(big.app, 'GET', `/trajectories?source=otlp&externalId=${traceId}`);
        const [item] = listed.body.items as { trajectoryId: string }[];
        const one = await call(big.app, 'GET', `/trajectories/${item!.trajectoryId}`);
        const [span] = one.body.items as { data: { attributes: { deep: unknown } } }[];
        expect(depthOf(span!.data.attributes.deep)).toBe(depth);
      },
    );
  });
});
