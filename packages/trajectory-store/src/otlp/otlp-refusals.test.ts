// What a hostile or broken OTLP request cannot do: overflow the stack with attribute text nested past
// any recursion (kept as text), or leave part of a refused request stored (everything is checked first).
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectCode } from '../contract.js';
import type { TraceEventDraft } from '../events.js';
import { importTrajectory } from '../imports.js';
import { localBackend } from '../local/local-backend.js';
import { TrajectoryStore } from '../trajectory-store.js';
import { type Attributes, decodeOtlpJson, decodeOtlpProtobuf, type OtlpSpan } from './otlp-decode.js';
import { ingestOtlp } from './otlp-ingest.js';
import { MAX_ATTRIBUTE_JSON_DEPTH, spansToDrafts } from './otlp-map.js';
import { exportRequestType } from './otlp-proto.js';

const BASE = 1_764_576_000_000_000_000n;

function span(traceId: string, n: number, attributes: Attributes, resource: Attributes = {}): OtlpSpan {
  const start = BASE + BigInt(n) * 1_000n;
  return {
    traceId,
    spanId: `${traceId.slice(0, 10)}${n.toString(16).padStart(6, '0')}`,
    name: 'span',
    kind: 1,
    startTimeUnixNano: String(start),
    endTimeUnixNano: String(start + 500n),
    attributes,
    events: [],
    status: { code: 0 },
    resource,
  };
}

const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const badToolCall = { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.call.id': 'c'.repeat(201) };

async function newStore(): Promise<TrajectoryStore> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'otlp-refusals-'));
  return new TrajectoryStore({ backend: localBackend({ root }) });
}

async function objects(store: TrajectoryStore, tenant: string): Promise<string[]> {
  const paths: string[] = [];
  for (const prefix of ['trajectories/', 'imports/'])
    for await (const o of store.backend.list(tenant, prefix)) paths.push(o.path);
  return paths.sort();
}

describe('attribute text nested past the stack', () => {
  const deep = nested(200_000);

  it('a chat span’s messages and a tool span’s arguments stay text, and the events still parse', async () => {
    const drafts = spansToDrafts([
      span('a1'.repeat(16), 0, { 'gen_ai.operation.name': 'chat', 'gen_ai.input.messages': deep }),
      span('a1'.repeat(16), 1, {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.call.arguments': deep,
      }),
    ]);
    expect(drafts.find((d) => d.type === 'message')).toMatchObject({ role: 'user', content: deep });
    expect(drafts.find((d) => d.type === 'tool_call')).toMatchObject({ input: deep });
    const store = await newStore();
    expect(() => store.checkDrafts('imp_deep', drafts)).not.toThrow();
    await store.close();
  });

  it(`parses text nested ${MAX_ATTRIBUTE_JSON_DEPTH} levels; one more stays text (brackets in strings do not count)`, () => {
    const inputOf = (text: string) => {
      const [call] = spansToDrafts([
        span('a2'.repeat(16), 0, {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.call.arguments': text,
        }),
      ]);
      return call?.type === 'tool_call' ? call.input : undefined;
    };
    const atLimit = nested(MAX_ATTRIBUTE_JSON_DEPTH);
    expect(inputOf(atLimit)).toEqual(JSON.parse(atLimit));
    expect(inputOf(nested(MAX_ATTRIBUTE_JSON_DEPTH + 1))).toBe(nested(MAX_ATTRIBUTE_JSON_DEPTH + 1));
    expect(inputOf(`["${'['.repeat(1_000)}"]`)).toEqual(['['.repeat(1_000)]);
  });
});

describe('a refused import or OTLP request stores nothing', () => {
  it('an import whose event 1,002 is invalid writes no meta and no first chunk', async () => {
    const store = await newStore();
    const traceId = 'b1'.repeat(16);
    const drafts: TraceEventDraft[] = spansToDrafts([
      ...Array.from({ length: 1_001 }, (_, i) => span(traceId, i, {})),
      span(traceId, 1_001, badToolCall),
    ]);
    await expectCode(
      importTrajectory(store, 'acme', {
        provenance: { source: 'otlp', externalId: traceId, pulledAt: '2026-12-01T12:00:00.000Z' },
        events: drafts,
      }),
      'bad_request',
    );
    expect(await objects(store, 'acme')).toEqual([]);
    await store.close();
  });

  it('an invalid trace refuses the request before a valid trace is imported or a live run appended', async () => {
    const store = await newStore();
    const spans = [
      span('b2'.repeat(16), 0, {}),
      span('b3'.repeat(16), 1, {}, { 'everdict.run_id': 'run-live' }),
      span('b4'.repeat(16), 2, badToolCall),
    ];
    await expectCode(
      ingestOtlp(store, 'acme', spans, {
        pulledAt: new Date('2026-12-01T12:00:00Z'),
        isLiveRun: (id) => id === 'run-live',
      }),
      'bad_request',
    );
    expect(await objects(store, 'acme')).toEqual([]);
    await store.close();
  });
});

describe('an AnyValue nested past MAX_ATTRIBUTE_JSON_DEPTH', () => {
  /** An OTLP/JSON request (parsed) whose one span's attribute `deep` nests `depth` kvlistValue levels. */
  function request(depth: number) {
    let value: unknown = { stringValue: 'x' };
    for (let i = 0; i < depth; i++) value = { kvlistValue: { values: [{ key: 'k', value }] } };
    const span = {
      traceId: 'f1'.repeat(16),
      spanId: 'f1'.repeat(8),
      name: 'deep',
      startTimeUnixNano: String(BASE),
      endTimeUnixNano: String(BASE + 1_000n),
      attributes: [{ key: 'deep', value }],
    };
    return { resourceSpans: [{ scopeSpans: [{ spans: [span] }] }] };
  }

  it('is refused (bad_request) before anything walks it recursively; at the bound it decodes exact', async () => {
    await expectCode(
      Promise.resolve().then(() => decodeOtlpJson(request(100_000))),
      'bad_request',
    );
    await expectCode(
      Promise.resolve().then(() => decodeOtlpJson(request(MAX_ATTRIBUTE_JSON_DEPTH + 1))),
      'bad_request',
    );
    const [span] = decodeOtlpJson(request(MAX_ATTRIBUTE_JSON_DEPTH));
    let depth = 0;
    for (let v: unknown = span!.attributes.deep; v && typeof v === 'object'; depth++)
      v = (v as Record<string, unknown>).k;
    expect(depth).toBe(MAX_ATTRIBUTE_JSON_DEPTH);
  });
});

describe('a malformed OTLP/JSON body', () => {
  const withIds = (traceId: string, spanId: string, parentSpanId?: string) => ({
    resourceSpans: [
      {
        scopeSpans: [
          {
            spans: [
              {
                traceId,
                spanId,
                ...(parentSpanId === undefined ? {} : { parentSpanId }),
                name: 's',
                startTimeUnixNano: String(BASE),
                endTimeUnixNano: String(BASE + 1_000n),
              },
            ],
          },
        ],
      },
    ],
  });
  const decode = (body: string) => Promise.resolve().then(() => decodeOtlpJson(body));

  it('that is JSON but not an object (null, an array, a number) is bad_request, not a TypeError', async () => {
    for (const body of ['null', '[]', '[null]', '7', '"text"']) await expectCode(decode(body), 'bad_request');
  });

  it('a span with an empty traceId or spanId is bad_request; an empty parentSpanId is a root span', async () => {
    await expectCode(decode(JSON.stringify(withIds('', 'f2'.repeat(8)))), 'bad_request');
    await expectCode(decode(JSON.stringify(withIds('f2'.repeat(16), ''))), 'bad_request');
    const [root] = await decode(JSON.stringify(withIds('f2'.repeat(16), 'f2'.repeat(8), '')));
    expect(root).toMatchObject({ traceId: 'f2'.repeat(16), spanId: 'f2'.repeat(8) });
    expect(root!.parentSpanId).toBeUndefined();
  });
});

describe('a non-finite double attribute', () => {
  it('decodes from protobuf as OTLP/JSON writes it ("NaN", "Infinity", "-Infinity"), not refused', () => {
    const values = [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1.5];
    const attributes = values.map((v, i) => ({ key: `d${i}`, value: { doubleValue: v } }));
    const span = (traceId: unknown, spanId: unknown, attrs: unknown) => ({
      traceId,
      spanId,
      name: 'ratio',
      startTimeUnixNano: String(BASE),
      endTimeUnixNano: String(BASE + 1_000n),
      attributes: attrs,
    });
    const type = exportRequestType();
    const proto = type
      .encode(
        type.fromObject({
          resourceSpans: [
            {
              scopeSpans: [
                {
                  spans: [
                    span(Buffer.from('f4'.repeat(16), 'hex'), Buffer.from('f4'.repeat(8), 'hex'), attributes),
                  ],
                },
              ],
            },
          ],
        }),
      )
      .finish();
    const asJson = attributes.map((a) => ({
      key: a.key,
      value: {
        doubleValue: Number.isFinite(a.value.doubleValue) ? a.value.doubleValue : String(a.value.doubleValue),
      },
    }));
    const json = JSON.stringify({
      resourceSpans: [{ scopeSpans: [{ spans: [span('f4'.repeat(16), 'f4'.repeat(8), asJson)] }] }],
    });
    const [fromProto] = decodeOtlpProtobuf(proto);
    expect(fromProto!.attributes).toEqual({ d0: 'NaN', d1: 'Infinity', d2: '-Infinity', d3: 1.5 });
    expect(decodeOtlpJson(json)).toEqual([fromProto]);
  });
});
