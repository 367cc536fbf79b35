// The OTLP trace protocol, loaded by protobufjs from the .proto files vendored under `proto/`
// (opentelemetry-proto v1.11.0, Apache-2.0; their license header is kept in each file).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const FILES = ['opentelemetry/proto/collector/trace/v1/trace_service.proto'];

/** `proto/` of this package, found from this module (src/otlp/ in tests, dist/ once built). */
function protoDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++, dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'proto');
    if (existsSync(path.join(candidate, 'opentelemetry'))) return candidate;
  }
  throw new Error('@everdict/trajectory-store: the vendored proto/ directory is missing');
}

let root: protobuf.Root | undefined;

function load(): protobuf.Root {
  if (root) return root;
  const dir = protoDir();
  const r = new protobuf.Root();
  r.resolvePath = (_origin, target) => path.join(dir, target);
  r.loadSync(FILES);
  r.resolveAll();
  root = r;
  return r;
}

export function exportRequestType(): protobuf.Type {
  return load().lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
}

export function exportResponseType(): protobuf.Type {
  return load().lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse');
}
