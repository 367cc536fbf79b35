// A real payload: the OpenTelemetry JS SDK exports the same spans to a local HTTP server twice, through
// the protobuf exporter and through the JSON exporter; both bodies must map to the same events.
import { once } from 'node:events';
import { mkdtemp } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { TraceEvent } from '@everdict/run-model';
import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import { OTLPTraceExporter as HttpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectCode } from '../contract.js';
import { sampleEvents } from '../fixtures.js';
import { listImported } from '../imports.js';
import { localBackend } from '../local/local-backend.js';
import { TrajectoryStore } from '../trajectory-store.js';
import { decodeOtlpJson, decodeOtlpProtobuf, decodeOtlpRequest, encodeOtlpResponse } from './otlp-decode.js';
import { groupSpans, ingestOtlp, spanBatchKey } from './otlp-ingest.js';
import { spansToDrafts } from './otlp-map.js';
import { exportResponseType } from './otlp-proto.js';

interface Captured {
  contentType: string;
  body: Buffer;
}
let server: Server;
let url: string;
const bodies: Captured[] = [];

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const p of req) parts.push(p as Buffer);
    bodies.push({ contentType: String(req.headers['content-type']), body: Buffer.concat(parts) });
    const proto = String(req.headers['content-type']).includes('protobuf');
    res.writeHead(200, { 'content-type': proto ? 'application/x-protobuf' : 'application/json' });
    res.end(Buffer.from(encodeOtlpResponse(proto ? 'protobuf' : 'json')));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const T = 1_764_576_000; // 2025-12-01T08:00:00Z

/** Emits one agent trace (model call, failing tool, plain span) under a resource, through both exporters. */
async function exportSpans(resource: Record<string, string>): Promise<{ json: Captured; proto: Captured }> {
  const start = bodies.length;
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'agent', ...resource }),
    spanProcessors: [
      new SimpleSpanProcessor(new ProtoExporter({ url })),
      new SimpleSpanProcessor(new HttpJsonExporter({ url })),
    ],
  });
  const tracer = provider.getTracer('everdict-test', '1.0.0');
  const root = tracer.startSpan('invoke_agent', {
    startTime: [T, 0],
    attributes: { 'gen_ai.operation.name': 'invoke_agent' },
  });
  const ctx = trace.setSpan(context.active(), root);
  const chat = tracer.startSpan(
    'chat gpt-4o',
    {
      startTime: [T, 1_000_000],
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': 'gpt-4o',
        'gen_ai.response.model': 'gpt-4o-2024-08-06',
        'gen_ai.usage.input_tokens': 1200,
        'gen_ai.usage.output_tokens': 85,
        'gen_ai.usage.cache_read.input_tokens': 1000,
        'gen_ai.usage.cost': 0.0042,
        'gen_ai.system_instructions': JSON.stringify([{ type: 'text', content: 'You fix bugs.' }]),
        'gen_ai.input.messages': JSON.stringify([
          { role: 'user', parts: [{ type: 'text', content: 'Fix the test' }] },
        ]),
        'gen_ai.output.messages': JSON.stringify([
          { role: 'assistant', parts: [{ type: 'text', content: 'Running the tests.' }] },
        ]),
      },
    },
    ctx,
  );
  chat.end([T, 501_000_000]);
  const tool = tracer.startSpan(
    'execute_tool run_tests',
    {
      startTime: [T, 600_000_000],
      attributes: {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'run_tests',
        'gen_ai.tool.call.id': 'call_1',
        'gen_ai.tool.call.arguments': JSON.stringify({ path: 'src', bail: true }),
      },
    },
    ctx,
  );
  tool.recordException({ name: 'TestFailure', message: '2 tests failed' }, [T, 900_000_000]);
  tool.setStatus({ code: SpanStatusCode.ERROR, message: 'tests failed' });
  tool.end([T, 950_000_000]);
  const plain = tracer.startSpan(
    'git diff',
    { startTime: [T + 1, 0], attributes: { files: 3, 'vcs.dirty': true } },
    ctx,
  );
  plain.end([T + 1, 20_000_000]);
  root.end([T + 2, 0]);
  await provider.forceFlush();
  await provider.shutdown();
  const got = bodies.slice(start);
  const json = got.filter((b) => b.contentType.startsWith('application/json'));
  const proto = got.filter((b) => b.contentType.startsWith('application/x-protobuf'));
  expect([json.length, proto.length]).toEqual([4, 4]); // one request per span (SimpleSpanProcessor)
  // Merge the four requests of each form into one request body per form.
  const mergeJson = { resourceSpans: json.flatMap((b) => JSON.parse(b.body.toString()).resourceSpans) };
  const type = (await import('./otlp-proto.js')).exportRequestType();
  const mergedProto = type
    .encode(
      type.create({
        resourceSpans: proto.flatMap(
          (b) => (type.decode(b.body) as unknown as { resourceSpans: unknown[] }).resourceSpans,
        ),
      }),
    )
    .finish();
  return {
    json: { contentType: 'application/json', body: Buffer.from(JSON.stringify(mergeJson)) },
    proto: { contentType: 'application/x-protobuf', body: Buffer.from(mergedProto) },
  };
}

describe('OTLP import mapping', () => {
  it('decodes the SDK exporter JSON and protobuf forms of the same spans to the same spans and events', async () => {
    const { json, proto } = await exportSpans({});
    const fromJson = decodeOtlpRequest(json.contentType, json.body);
    const fromProto = decodeOtlpRequest(proto.contentType, proto.body);
    expect(fromJson).toHaveLength(4);
    expect(fromProto).toEqual(fromJson);
    expect(fromJson[0]!.traceId).toMatch(/^[0-9a-f]{32}$/);
    const drafts = spansToDrafts(fromJson);
    expect(spansToDrafts(fromProto)).toEqual(drafts);
    const at = (ns: number, s = 0) => `2025-12-01T08:00:0${s}.${String(ns).padStart(9, '0')}Z`;
    expect(drafts.map((d) => d.type)).toEqual([
      'extension', // invoke_agent (no model, no tool): kept as otel/span
      'message', // system instructions
      'message', // input
      'llm_call',
      'message', // output
      'tool_call',
      'error', // the recorded exception
      'tool_result',
      'extension', // git diff
    ]);
    expect(drafts[1]).toEqual({
      type: 'message',
      ts: at(1_000_000),
      role: 'system',
      content: 'You fix bugs.',
    });
    expect(drafts[2]).toEqual({ type: 'message', ts: at(1_000_000), role: 'user', content: 'Fix the test' });
    expect(drafts[3]).toEqual({
      type: 'llm_call',
      ts: at(1_000_000),
      model: 'gpt-4o-2024-08-06',
      inputTokens: 1200,
      outputTokens: 85,
      cacheReadTokens: 1000,
      costUsd: 0.0042,
      latencyMs: 500,
    });
    expect(drafts[4]).toMatchObject({
      role: 'assistant',
      content: 'Running the tests.',
      ts: at(501_000_000),
    });
    expect(drafts[5]).toEqual({
      type: 'tool_call',
      ts: at(600_000_000),
      callId: 'call_1',
      tool: 'run_tests',
      input: { path: 'src', bail: true },
    });
    expect(drafts[6]).toMatchObject({ type: 'error', message: '2 tests failed', code: 'TestFailure' });
    expect(drafts[7]).toMatchObject({ type: 'tool_result', callId: 'call_1', output: null, isError: true });
    expect(drafts[8]).toMatchObject({
      type: 'extension',
      ext: 'otel/span',
      data: { name: 'git diff', attributes: { files: 3, 'vcs.dirty': true } },
    });
    // Every draft becomes a valid run-model TraceEvent once numbered.
    drafts.forEach((d, seq) => {
      TraceEvent.parse({ ...d, seq, runId: 'r' });
    });
  });

  it('routes spans carrying everdict.run_id of a live run, and groups the rest by trace', async () => {
    const routed = await exportSpans({ 'everdict.run_id': 'run-42' });
    const spans = decodeOtlpJson(routed.json.body);
    expect(groupSpans(spans, new Set(['run-42'])).routed.get('run-42')).toHaveLength(4);
    const notLive = groupSpans(spans, new Set());
    expect(notLive.routed.size).toBe(0);
    expect([...notLive.traces.values()].map((g) => g.length)).toEqual([4]);
    expect(spanBatchKey(spans)).toBe(spanBatchKey([...spans].reverse()));
  });

  it('refuses bodies that are not OTLP with bad_request, and answers with ExportTraceServiceResponse', async () => {
    await expectCode(
      Promise.resolve().then(() => decodeOtlpJson('{nope')),
      'bad_request',
    );
    await expectCode(
      Promise.resolve().then(() => decodeOtlpJson({ resourceSpans: [{ scopeSpans: [{ spans: [{}] }] }] })),
      'bad_request',
    );
    await expectCode(
      Promise.resolve().then(() => decodeOtlpProtobuf(Buffer.from([0x0a, 0xff, 0xff]))),
      'bad_request',
    );
    await expectCode(
      Promise.resolve().then(() => decodeOtlpRequest('text/plain', Buffer.from(''))),
      'bad_request',
    );
    const bad = {
      resourceSpans: [
        {
          scopeSpans: [
            {
              spans: [
                { traceId: 'xyz', spanId: '00', name: 'a', startTimeUnixNano: '1', endTimeUnixNano: '2' },
              ],
            },
          ],
        },
      ],
    };
    await expectCode(
      Promise.resolve().then(() => decodeOtlpJson(bad)),
      'bad_request',
    );
    const response = encodeOtlpResponse('protobuf', { rejectedSpans: 2, errorMessage: 'no' });
    expect(exportResponseType().toObject(exportResponseType().decode(response), { longs: Number })).toEqual({
      partialSuccess: { rejectedSpans: 2, errorMessage: 'no' },
    });
  });

  it('ingests: live-run spans append to the run once, other traces become imported trajectories', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'otlp-ingest-'));
    const store = new TrajectoryStore({ backend: localBackend({ root }) });
    await store.append('acme', 'run-42', sampleEvents('run-42', 0, 2));
    const routedSpans = decodeOtlpJson((await exportSpans({ 'everdict.run_id': 'run-42' })).json.body);
    const otherSpans = decodeOtlpJson((await exportSpans({ 'everdict.run_id': 'run-gone' })).json.body);
    const spans = [...routedSpans, ...otherSpans];
    const isLiveRun = (id: string) => id === 'run-42';
    const pulledAt = new Date('2026-12-01T12:00:00Z');
    const first = await ingestOtlp(store, 'acme', spans, { pulledAt, isLiveRun });
    expect(first.routed).toEqual([{ runId: 'run-42', spans: 4, appended: 9, duplicates: 0 }]);
    expect(first.imported).toHaveLength(1);
    const again = await ingestOtlp(store, 'acme', spans, {
      pulledAt: new Date('2026-12-01T12:00:05Z'),
      isLiveRun,
    });
    expect(again.routed[0]).toMatchObject({ appended: 0 });
    expect(again.imported).toEqual(first.imported); // the same spans re-sent: the same copy
    const page = await store.read('acme', 'run-42', { limit: 100 });
    expect(page.items.map((e) => [e.seq, e.type]).slice(0, 4)).toEqual([
      [0, 'message'],
      [1, 'llm_call'],
      [2, 'extension'],
      [3, 'message'],
    ]);
    expect(page.eventCount).toBe(11);
    const traceId = otherSpans[0]!.traceId;
    expect(await listImported(store, 'acme', { source: 'otlp', externalId: traceId })).toEqual([
      expect.objectContaining({
        provenance: { source: 'otlp', externalId: traceId, pulledAt: '2026-12-01T12:00:00.000Z' },
        eventCount: 9,
      }),
    ]);
    await store.close();
  });
});
