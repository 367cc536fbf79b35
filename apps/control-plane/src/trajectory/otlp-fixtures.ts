// OTLP ExportTraceServiceRequests for tests and the bench: the JSON encoding (hex ids, string 64-bit ints)
// and the protobuf encoding (protobufjs over trajectory-store's vendored opentelemetry-proto files).
import { createRequire } from 'node:module';
import path from 'node:path';
import protobuf from 'protobufjs';

export interface SpanSpec {
  traceId: string; // 32 hex
  spanId: string; // 16 hex
  name: string;
  startNs: bigint;
  endNs: bigint;
  attributes?: Record<string, string | number>;
}

function attr(key: string, v: string | number) {
  return {
    key,
    value:
      typeof v === 'string'
        ? { stringValue: v }
        : Number.isInteger(v)
          ? { intValue: String(v) }
          : { doubleValue: v },
  };
}

/** The OTLP/JSON body of `spans` under one resource (with `everdict.run_id` when given). */
export function otlpJson(spans: readonly SpanSpec[], resource: Record<string, string> = {}) {
  return {
    resourceSpans: [
      {
        resource: {
          attributes: Object.entries({ 'service.name': 'agent', ...resource }).map(([k, v]) => attr(k, v)),
        },
        scopeSpans: [
          {
            scope: { name: 'everdict-test', version: '1.0.0' },
            spans: spans.map((s) => ({
              traceId: s.traceId,
              spanId: s.spanId,
              name: s.name,
              kind: 1,
              startTimeUnixNano: String(s.startNs),
              endTimeUnixNano: String(s.endNs),
              attributes: Object.entries(s.attributes ?? {}).map(([k, v]) => attr(k, v)),
              status: {},
            })),
          },
        ],
      },
    ],
  };
}

let requestType: protobuf.Type | undefined;
function exportRequestType(): protobuf.Type {
  if (requestType) return requestType;
  const require = createRequire(import.meta.url);
  const pkg = path.dirname(require.resolve('@everdict/trajectory-store/package.json'));
  const dir = path.join(pkg, 'proto');
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => path.join(dir, target);
  root.loadSync(['opentelemetry/proto/collector/trace/v1/trace_service.proto']);
  root.resolveAll();
  requestType = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
  return requestType;
}

/** The same request in the protobuf encoding (what the OTel SDK's proto exporter sends). */
export function otlpProtobuf(spans: readonly SpanSpec[], resource: Record<string, string> = {}): Uint8Array {
  const body = otlpJson(spans, resource);
  const rs = body.resourceSpans[0]!;
  const obj = {
    resourceSpans: [
      {
        resource: rs.resource,
        scopeSpans: rs.scopeSpans.map((ss) => ({
          scope: ss.scope,
          spans: ss.spans.map((s) => ({
            ...s,
            traceId: Buffer.from(s.traceId, 'hex'),
            spanId: Buffer.from(s.spanId, 'hex'),
          })),
        })),
      },
    ],
  };
  const type = exportRequestType();
  return type.encode(type.fromObject(obj)).finish();
}

/** A model-call span (GenAI semantic conventions) and a plain span of one trace. */
export function agentTrace(traceId: string, base = 1_764_576_000_000_000_000n): SpanSpec[] {
  return [
    {
      traceId,
      spanId: `${traceId.slice(0, 14)}01`,
      name: 'chat gpt-4o',
      startNs: base,
      endNs: base + 2_000_000n,
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': 'gpt-4o',
        'gen_ai.usage.input_tokens': 1200,
        'gen_ai.usage.output_tokens': 85,
        'gen_ai.output.messages': JSON.stringify([
          { role: 'assistant', parts: [{ type: 'text', content: 'the tests pass now' }] },
        ]),
      },
    },
    {
      traceId,
      spanId: `${traceId.slice(0, 14)}02`,
      name: 'work',
      startNs: base + 3_000_000n,
      endNs: base + 4_000_000n,
    },
  ];
}

function varint(n: number): number[] {
  const out: number[] = [];
  for (; n > 127; n = Math.floor(n / 128)) out.push((n & 127) | 128);
  out.push(n);
  return out;
}

/** A length-delimited protobuf field. */
function field(n: number, bytes: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from([(n << 3) | 2, ...varint(bytes.length)]), bytes]);
}

/**
 * A protobuf request of one span whose attribute `deep` is an AnyValue nested `depth` levels — kvlistValue
 * {values: [{key: "k", value: …}]} or arrayValue {values: [ … ]} — around `stringValue: "x"`. Written on the
 * wire by hand, inside out (protobufjs's own encoder refuses past its recursion limit).
 */
export function otlpProtobufNested(
  traceId: string,
  depth: number,
  shape: 'kvlist' | 'array',
  resource: Record<string, string> = {},
): Uint8Array {
  const core = field(1, Buffer.from('x'));
  const prefixes: Buffer[] = [];
  let len = core.length;
  for (let i = 0; i < depth; i++) {
    let p: number[];
    if (shape === 'array') {
      const array = 1 + varint(len).length + len; // ArrayValue {values (1): AnyValue}
      p = [0x2a, ...varint(array), 0x0a, ...varint(len)]; // AnyValue {array_value (5)}
    } else {
      const kv = 3 + 1 + varint(len).length + len; // KeyValue {key (1): "k", value (2): AnyValue}
      const list = 1 + varint(kv).length + kv; // KeyValueList {values (1): KeyValue}
      p = [0x32, ...varint(list), 0x0a, ...varint(kv), 0x0a, 1, 0x6b, 0x12, ...varint(len)];
    }
    prefixes.push(Buffer.from(p));
    len += p.length;
  }
  const deep = Buffer.concat([...prefixes.reverse(), core]);
  const base = 1_764_576_000_000_000_000n;
  const shallow = otlpProtobuf(
    [{ traceId, spanId: `${traceId.slice(0, 14)}01`, name: 'deep', startNs: base, endNs: base + 1_000n }],
    resource,
  );
  // The span's attribute is appended to the span (repeated field 9): re-wrap span → scope → resource → request.
  const type = exportRequestType();
  const req = type.toObject(type.decode(shallow)) as {
    resourceSpans: { resource: unknown; scopeSpans: { scope: unknown; spans: unknown[] }[] }[];
  };
  const root = type.root;
  const Span = root.lookupType('opentelemetry.proto.trace.v1.Span');
  const Scope = root.lookupType('opentelemetry.proto.common.v1.InstrumentationScope');
  const Resource = root.lookupType('opentelemetry.proto.resource.v1.Resource');
  const rs = req.resourceSpans[0]!;
  const ss = rs.scopeSpans[0]!;
  const span = Buffer.concat([
    Span.encode(Span.fromObject(ss.spans[0] as object)).finish(),
    field(9, Buffer.concat([field(1, Buffer.from('deep')), field(2, deep)])),
  ]);
  const scopeSpans = Buffer.concat([
    field(1, Scope.encode(Scope.fromObject(ss.scope as object)).finish()),
    field(2, span),
  ]);
  const resourceSpans = Buffer.concat([
    field(1, Resource.encode(Resource.fromObject(rs.resource as object)).finish()),
    field(2, scopeSpans),
  ]);
  return field(1, resourceSpans);
}
