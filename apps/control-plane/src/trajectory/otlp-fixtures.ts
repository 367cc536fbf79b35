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
