// Two things both OTLP encodings must decode alike: an attribute keyed `__proto__` (an ordinary key, never the
// attribute map's prototype) and a span that ends before it starts (refused, whatever kind of span it is).
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectCode } from '../contract.js';
import { localBackend } from '../local/local-backend.js';
import { TrajectoryStore } from '../trajectory-store.js';
import { decodeOtlpJson, decodeOtlpProtobuf, type OtlpSpan } from './otlp-decode.js';
import { ingestOtlp } from './otlp-ingest.js';
import { runIdOf, spansToDrafts } from './otlp-map.js';
import { exportRequestType } from './otlp-proto.js';

const BASE = 1_764_576_000_000_000_000n;
const TRACE = 'c7'.repeat(16);
const SPAN = 'c7'.repeat(8);

type KeyValue = { key: string; value: Record<string, unknown> };
const str = (key: string, v: string): KeyValue => ({ key, value: { stringValue: v } });
const kvlist = (key: string, values: KeyValue[]): KeyValue => ({ key, value: { kvlistValue: { values } } });

/** One span in an ExportTraceServiceRequest, ids as OTLP/JSON (hex) or protobufjs (bytes) want them. */
function request(
  binary: boolean,
  span: { attributes: KeyValue[]; start: bigint; end: bigint },
  resource: KeyValue[] = [],
) {
  const idOf = (hex: string) => (binary ? Buffer.from(hex, 'hex') : hex);
  return {
    resourceSpans: [
      {
        resource: { attributes: resource },
        scopeSpans: [
          {
            spans: [
              {
                traceId: idOf(TRACE),
                spanId: idOf(SPAN),
                name: 'work',
                startTimeUnixNano: String(span.start),
                endTimeUnixNano: String(span.end),
                attributes: span.attributes,
              },
            ],
          },
        ],
      },
    ],
  };
}

/** The same span decoded from OTLP/JSON and from protobuf. */
function decodeBoth(
  span: { attributes: KeyValue[]; start: bigint; end: bigint },
  resource: KeyValue[] = [],
): { json: () => OtlpSpan[]; protobuf: () => OtlpSpan[] } {
  const type = exportRequestType();
  return {
    json: () => decodeOtlpJson(JSON.stringify(request(false, span, resource))),
    protobuf: () => decodeOtlpProtobuf(type.encode(type.fromObject(request(true, span, resource))).finish()),
  };
}

describe('an attribute keyed __proto__', () => {
  // Its value is a map naming a chat operation and a run: as the map's prototype it would answer both look-ups.
  const lure = [str('gen_ai.operation.name', 'chat'), str('everdict.run_id', 'run-lured')];
  const decoders = decodeBoth(
    { attributes: [kvlist('__proto__', lure), str('plain', 'kept')], start: BASE, end: BASE + 1_000n },
    [kvlist('__proto__', lure), str('service.name', 'svc')],
  );

  for (const encoding of ['json', 'protobuf'] as const) {
    it(`is an ordinary own key from ${encoding}, and misleads neither the mapping nor the routing`, async () => {
      const [span] = decoders[encoding]();
      for (const map of [span!.attributes, span!.resource]) {
        expect(Object.keys(map)).toContain('__proto__');
        expect(Object.getPrototypeOf(map)).toBeNull();
        expect(map['gen_ai.operation.name']).toBeUndefined();
        expect(
          Object.keys(Object.getOwnPropertyDescriptor(map, '__proto__')?.value as object).sort(),
        ).toEqual(['everdict.run_id', 'gen_ai.operation.name']);
      }
      expect(span!.attributes.plain).toBe('kept');
      expect(runIdOf(span!)).toBeUndefined();
      const drafts = spansToDrafts([span!]);
      expect(drafts.map((d) => d.type)).toEqual(['extension']); // not an llm_call
      const asked: string[] = [];
      const store = new TrajectoryStore({
        backend: localBackend({ root: await mkdtemp(path.join(os.tmpdir(), 'otlp-proto-key-')) }),
      });
      const result = await ingestOtlp(store, 'acme', [span!], {
        pulledAt: new Date('2026-12-01T12:00:00Z'),
        isLiveRun: (runId) => {
          asked.push(runId);
          return true;
        },
      });
      expect(asked).toEqual([]);
      expect(result.routed).toEqual([]);
      expect(result.imported).toHaveLength(1);
      await store.close();
    });
  }

  it('decodes alike from both encodings', () => {
    expect(decoders.json()).toEqual(decoders.protobuf());
  });
});

describe('a span that ends before it starts', () => {
  const kinds: Record<string, KeyValue[]> = {
    'a plain span': [],
    'a tool span': [str('gen_ai.operation.name', 'execute_tool'), str('gen_ai.tool.name', 'grep')],
    'a model-call span': [str('gen_ai.operation.name', 'chat')],
  };

  for (const [kind, attributes] of Object.entries(kinds)) {
    it(`${kind}: bad_request from JSON and protobuf alike; ending as it starts decodes`, async () => {
      const backwards = decodeBoth({ attributes, start: BASE + 1_000n, end: BASE + 999n });
      await expectCode(Promise.resolve().then(backwards.json), 'bad_request');
      await expectCode(Promise.resolve().then(backwards.protobuf), 'bad_request');
      expect(() => backwards.json()).toThrow(/ends .* before it starts/);
      expect(() => backwards.protobuf()).toThrow(/ends .* before it starts/);

      const instant = decodeBoth({ attributes, start: BASE + 1_000n, end: BASE + 1_000n });
      expect(instant.json()).toEqual(instant.protobuf());
      expect(spansToDrafts(instant.json()).length).toBeGreaterThan(0);
    });
  }
});
