// OTLP attributes keyed `__proto__`, `constructor`, `toString` on the real core (PGlite): POST /v1/traces, read
// the trajectory back through the HTTP API — imported or appended to a live run, from JSON or protobuf — and
// every key is there with its value (zod, which validates each event, leaves a `__proto__` key out; the store
// puts it back). A tool span's arguments keyed so keep them too.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type TestApp, testApp } from '../http/testing/harness.js';
import { otlpJson, otlpProtobuf, type SpanSpec } from './otlp-fixtures.js';

const BASE = 1_764_576_000_000_000_000n;
const cmd = { kind: 'command', subject: { path: 'x', image: 'alpine:3.20', command: ['true'] } };

let t: TestApp;
let dataDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'cp-otlp-proto-'));
  t = await testApp({ dataDir });
}, 300_000);
afterAll(async () => {
  await t.close();
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

/** A generic span (stored as an `otel/span` extension) and a tool span, attributes from JSON text. */
function spans(traceId: string): SpanSpec[] {
  return [
    {
      traceId,
      spanId: '1'.repeat(16),
      name: 'work',
      startNs: BASE,
      endNs: BASE + 1_000n,
      attributes: JSON.parse('{"__proto__":"p","constructor":"c","toString":"t","plain":"x"}'),
    },
    {
      traceId,
      spanId: '2'.repeat(16),
      name: 'edit',
      startNs: BASE + 2_000n,
      endNs: BASE + 3_000n,
      attributes: {
        'gen_ai.tool.name': 'edit',
        'gen_ai.tool.call.arguments': '{"__proto__":{"path":"a.ts"},"constructor":1,"toString":"t"}',
      },
    },
  ];
}

/** Own keys (a `__proto__` that became a prototype is not one) and the own value at one. */
const keys = (o: unknown) => Object.keys(o as object).sort();
const own = (o: unknown, key: string) => Object.getOwnPropertyDescriptor(o, key)?.value;

function expectKept(items: Record<string, unknown>[]): void {
  const span = items.find((e) => e.type === 'extension') as { data: { attributes: unknown } };
  expect(keys(span.data.attributes)).toEqual(['__proto__', 'constructor', 'plain', 'toString']);
  expect(own(span.data.attributes, '__proto__')).toBe('p');
  expect(own(span.data.attributes, 'constructor')).toBe('c');
  expect(own(span.data.attributes, 'toString')).toBe('t');
  const tool = items.find((e) => e.type === 'tool_call') as { input: unknown };
  expect(keys(tool.input)).toEqual(['__proto__', 'constructor', 'toString']);
  expect(own(tool.input, '__proto__')).toEqual({ path: 'a.ts' });
  expect(own(tool.input, 'constructor')).toBe(1);
}

describe('OTLP attributes keyed __proto__, constructor, toString', { timeout: 120_000 }, () => {
  for (const encoding of ['json', 'protobuf'] as const) {
    const send = async (body: SpanSpec[], resource: Record<string, string> = {}) => {
      const res = await t.app.request('/v1/traces', {
        method: 'POST',
        headers: {
          authorization: `Bearer ${await t.key('member')}`,
          'content-type': encoding === 'json' ? 'application/json' : 'application/x-protobuf',
        },
        body: encoding === 'json' ? JSON.stringify(otlpJson(body, resource)) : otlpProtobuf(body, resource),
      });
      expect(res.status).toBe(200);
    };

    it(`are kept in an imported trajectory (${encoding})`, async () => {
      const traceId = (encoding === 'json' ? 'e1' : 'e2').repeat(16);
      await send(spans(traceId));
      const list = await call(t.app, 'GET', `/trajectories?source=otlp&externalId=${traceId}`);
      const [imported] = list.body.items as { trajectoryId: string; digest: string }[];
      const one = await call(t.app, 'GET', `/trajectories/${imported!.trajectoryId}`);
      expect(one.status).toBe(200);
      expectKept(one.body.items as Record<string, unknown>[]);
    });

    it(`are kept in a live run's trajectory (${encoding})`, async () => {
      const created = await call(t.app, 'POST', '/runs', { body: cmd });
      const runId = (created.body.run as { id: string }).id;
      await send(spans((encoding === 'json' ? 'f1' : 'f2').repeat(16)), { 'everdict.run_id': runId });
      const page = await call(t.app, 'GET', `/runs/${runId}/trajectory`);
      expect(page.status).toBe(200);
      expectKept(page.body.items as Record<string, unknown>[]);
    });
  }
});
