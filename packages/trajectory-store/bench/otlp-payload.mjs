// A protobuf ExportTraceServiceRequest of `n` GenAI spans (model calls, tool calls, plain spans), built
// with the package's own protobufjs root, and the baseline: protobufjs decoding it with nothing else.

import path from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const dir = fileURLToPath(new URL('../proto', import.meta.url));
const root = new protobuf.Root();
root.resolvePath = (_o, target) => path.join(dir, target);
root.loadSync(['opentelemetry/proto/collector/trace/v1/trace_service.proto']);
const Request = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');

const kv = (key, value) => ({ key, value });
const T0 = 1_764_576_000_000_000_000n;

export function otlpRequestBytes(n) {
  const spans = [];
  for (let i = 0; i < n; i++) {
    const start = T0 + BigInt(i) * 1_000_000n;
    const attributes =
      i % 3 === 0
        ? [
            kv('gen_ai.operation.name', { stringValue: 'chat' }),
            kv('gen_ai.request.model', { stringValue: 'gpt-4o' }),
            kv('gen_ai.usage.input_tokens', { intValue: 1200 + i }),
            kv('gen_ai.usage.output_tokens', { intValue: 80 }),
          ]
        : i % 3 === 1
          ? [
              kv('gen_ai.operation.name', { stringValue: 'execute_tool' }),
              kv('gen_ai.tool.name', { stringValue: 'grep' }),
              kv('gen_ai.tool.call.arguments', { stringValue: '{"pattern":"error"}' }),
            ]
          : [kv('http.method', { stringValue: 'GET' }), kv('http.status_code', { intValue: 200 })];
    spans.push({
      traceId: Buffer.from('5b8efff798038103d269b633813fc60c', 'hex'),
      spanId: Buffer.from((i + 1).toString(16).padStart(16, '0'), 'hex'),
      name: `span ${i}`,
      kind: 1,
      startTimeUnixNano: start.toString(),
      endTimeUnixNano: (start + 500_000n).toString(),
      attributes,
    });
  }
  const message = Request.fromObject({
    resourceSpans: [
      { resource: { attributes: [kv('service.name', { stringValue: 'bench' })] }, scopeSpans: [{ spans }] },
    ],
  });
  return Request.encode(message).finish();
}

export function rawDecode(bytes) {
  return Request.toObject(Request.decode(bytes), { longs: String, enums: Number, bytes: String });
}
