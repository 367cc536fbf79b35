#!/usr/bin/env node
// Benchmark `trajectory.otlp`: spans/s through POST /v1/traces (a real HTTP server on the built app, API key,
// decode, route/import into the local trajectory store, ExportTraceServiceResponse), side by side with the
// store's own `ingestOtlp(store, tenant, decodeOtlpRequest(type, bytes))` on the same bodies in the same
// process (the baseline: no HTTP, no auth, no ledger look-up). Both import one trajectory per request (a
// fresh trace id each) — JSON and protobuf. Needs the built app: `pnpm --filter @everdict/control-plane build`.
// Embedded PGlite (in memory) for the ledger.
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { serve } from '@hono/node-server';
import protobuf from 'protobufjs';
import { buildApp, openTrajectoryStore, startCore } from '../dist/index.js';

const require = createRequire(import.meta.url);
const { decodeOtlpRequest, ingestOtlp } = await import(
  path.join(path.dirname(require.resolve('@everdict/trajectory-store/package.json')), 'dist/index.js')
);

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 200);
const SPANS = Number(process.env.BENCH_SPANS ?? 50); // per request (the SDK's batch exporter sends up to 512)
const KEY = 'evd_bench_admin_key_0123456789abcdef';

function attr(key, v) {
  return { key, value: typeof v === 'string' ? { stringValue: v } : { intValue: String(v) } };
}
function body(i, salt) {
  const traceId = (salt + i.toString(16)).padStart(32, '0').slice(-32);
  const spans = Array.from({ length: SPANS }, (_, j) => ({
    traceId,
    spanId: (j + 1).toString(16).padStart(16, '0'),
    name: j % 2 ? 'execute_tool run_tests' : 'chat gpt-4o',
    kind: 1,
    startTimeUnixNano: String(1_764_576_000_000_000_000n + BigInt(j) * 1_000_000n),
    endTimeUnixNano: String(1_764_576_000_000_000_000n + BigInt(j) * 1_000_000n + 500_000n),
    attributes:
      j % 2
        ? [attr('gen_ai.tool.name', 'run_tests'), attr('gen_ai.tool.call.arguments', '{"path":"src"}')]
        : [
            attr('gen_ai.operation.name', 'chat'),
            attr('gen_ai.request.model', 'gpt-4o'),
            attr('gen_ai.usage.input_tokens', 1200 + j),
            attr('gen_ai.usage.output_tokens', 85),
          ],
    status: {},
  }));
  return {
    resourceSpans: [
      {
        resource: { attributes: [attr('service.name', 'agent')] },
        scopeSpans: [{ scope: { name: 'bench', version: '1' }, spans }],
      },
    ],
  };
}

const protoDir = path.join(path.dirname(require.resolve('@everdict/trajectory-store/package.json')), 'proto');
const root = new protobuf.Root();
root.resolvePath = (_o, target) => path.join(protoDir, target);
root.loadSync(['opentelemetry/proto/collector/trace/v1/trace_service.proto']);
root.resolveAll();
const Req = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
function toProto(b) {
  const rs = b.resourceSpans[0];
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
  return Req.encode(Req.fromObject(obj)).finish();
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-otlp-'));
const store = openTrajectoryStore({ dataDir: path.join(dir, 'http') });
const core = await startCore({ bootstrapKey: KEY, scheduler: { enabled: false }, trajectories: store });
const { app } = buildApp({
  services: core.services,
  health: () => core.health(),
  trajectories: core.trajectoryService,
  maxBodyBytes: 16 * 1024 * 1024,
});
const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
await new Promise((r) => server.once('listening', r));
const url = `http://127.0.0.1:${server.address().port}/v1/traces`;
const baseStore = openTrajectoryStore({ dataDir: path.join(dir, 'baseline') });

async function viaHttp(bodies, type) {
  const t0 = performance.now();
  for (const b of bodies) {
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': type },
      body: b,
    });
    if (res.status !== 200) throw new Error(`POST /v1/traces ${res.status}: ${await res.text()}`);
    await res.arrayBuffer();
  }
  return performance.now() - t0;
}
async function viaStore(bodies, type) {
  const t0 = performance.now();
  for (const b of bodies) {
    const bytes = typeof b === 'string' ? Buffer.from(b) : b;
    await ingestOtlp(baseStore, 'default', decodeOtlpRequest(type, bytes), {
      pulledAt: new Date(),
      isLiveRun: () => false,
    });
  }
  return performance.now() - t0;
}

let salt = 1;
for (const [format, type] of [
  ['json', 'application/json'],
  ['protobuf', 'application/x-protobuf'],
]) {
  const make = () => {
    const s = (salt++).toString(16);
    return Array.from({ length: REQUESTS }, (_, i) => {
      const b = body(i, `${s}f`);
      return format === 'json' ? JSON.stringify(b) : toProto(b);
    });
  };
  await viaHttp(make().slice(0, 10), type); // warm-up
  await viaStore(make().slice(0, 10), type);
  const httpMs = await viaHttp(make(), type);
  const baseMs = await viaStore(make(), type);
  const spans = REQUESTS * SPANS;
  const spansPerS = Math.round(spans / (httpMs / 1000));
  const basePerS = Math.round(spans / (baseMs / 1000));
  console.log(
    `BENCH ${JSON.stringify({
      name: 'trajectory.otlp',
      format,
      requests: REQUESTS,
      spans_per_request: SPANS,
      spans_per_s: spansPerS,
      baseline_ingest_spans_per_s: basePerS,
      ratio: Number((spansPerS / basePerS).toFixed(3)),
    })}`,
  );
}

server.close();
await core.close();
await baseStore.close();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
