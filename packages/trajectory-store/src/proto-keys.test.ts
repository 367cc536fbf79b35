// A key named `__proto__` (and `constructor`, `toString`, `prototype`) in an event's JSON is data: appended,
// stored, read back and sealed with it, the digest the same on write and read. zod leaves such a key out of what
// it parses; run-model's JSON values put it back (its json-value.ts).
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { blake3 } from '@noble/hashes/blake3.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import { canonicalJson, canonicalJsonl } from './canonical.js';
import { expectCode } from './contract.js';
import { importTrajectory } from './imports.js';
import { localBackend } from './local/local-backend.js';
import { decodeOtlpJson } from './otlp/otlp-decode.js';
import { ingestOtlp } from './otlp/otlp-ingest.js';
import { JsonlTraceSource } from './pull/jsonl-source.js';
import { TrajectoryStore } from './trajectory-store.js';

const T = 'acme';
const TS = '2026-12-01T12:00:00Z';
const KEYS = ['__proto__', 'constructor', 'prototype', 'toString'];

async function openStore(): Promise<TrajectoryStore> {
  return new TrajectoryStore({
    backend: localBackend({ root: await mkdtemp(path.join(os.tmpdir(), 'proto-keys-')) }),
  });
}

/** The own keys of `value` at `path`, sorted (a key that became a prototype is not among them). */
function ownKeys(value: unknown, ...path: string[]): string[] {
  let at = value;
  for (const key of path) at = Object.getOwnPropertyDescriptor(at, key)?.value;
  return Object.keys(at as object).sort();
}

// JSON text: JSON.parse keeps `__proto__` as an own key at every depth.
const input =
  '{"__proto__":{"__proto__":"deep","x":1},"constructor":"c","prototype":[{"__proto__":2}],"toString":"t"}';
const events = (runId: string) =>
  JSON.parse(
    `[{"type":"tool_call","seq":0,"ts":"${TS}","runId":"${runId}","callId":"c1","tool":"edit","input":${input}},` +
      `{"type":"tool_result","seq":1,"ts":"${TS}","runId":"${runId}","callId":"c1","output":{"__proto__":null}},` +
      `{"type":"extension","seq":2,"ts":"${TS}","runId":"${runId}","ext":"acme/span","data":{"__proto__":"d"}}]`,
  ) as unknown[];

describe('a __proto__ key in an event', () => {
  it('is stored, read back and sealed as data; the digest is the same on write and read', async () => {
    const store = await openStore();
    const sent = events('run-p');
    await store.append(T, 'run-p', sent);
    const live = await store.read(T, 'run-p');
    const sealed = await store.seal(T, 'run-p');
    const read = await store.read(T, 'run-p');
    for (const page of [live, read]) {
      const [call, result, ext] = page.items;
      expect(ownKeys(call, 'input')).toEqual(KEYS);
      expect(ownKeys(call, 'input', '__proto__')).toEqual(['__proto__', 'x']);
      expect(ownKeys(result, 'output')).toEqual(['__proto__']);
      expect(ownKeys(ext, 'data')).toEqual(['__proto__']);
      expect(canonicalJsonl(page.items)).toBe(canonicalJsonl(sent));
    }
    expect(canonicalJson((read.items[0] as { input: unknown }).input)).toBe(
      '{"__proto__":{"__proto__":"deep","x":1},"constructor":"c","prototype":[{"__proto__":2}],"toString":"t"}',
    );
    const digest = `blake3:${bytesToHex(blake3(new TextEncoder().encode(canonicalJsonl(sent))))}`;
    expect(sealed.seal.digest).toBe(digest);
    expect((await store.verify(T, 'run-p', digest)).ok).toBe(true);
    // A new store over the same objects (a restart) reads and verifies the same.
    const restarted = new TrajectoryStore({ backend: store.backend });
    expect(canonicalJsonl((await restarted.read(T, 'run-p')).items)).toBe(canonicalJsonl(sent));
    expect((await restarted.verify(T, 'run-p', digest)).ok).toBe(true);
    await store.close();
  });

  it('a re-sent event with a __proto__ key is a duplicate, one with another value there a conflict', async () => {
    const store = await openStore();
    await store.append(T, 'run-d', events('run-d'));
    expect(await store.append(T, 'run-d', events('run-d'))).toMatchObject({ appended: 0, duplicates: 3 });
    const changed = events('run-d').slice(0, 2);
    (changed[1] as { output: unknown }).output = JSON.parse('{"__proto__":"other"}');
    await expectCode(store.append(T, 'run-d', changed), 'event_conflict');
    await store.close();
  });

  it('a __proto__ value that is not JSON is bad_request', async () => {
    const store = await openStore();
    const [call] = events('run-b') as { input: object }[];
    Object.defineProperty(call!.input, '__proto__', { value: { fn: () => 1 }, enumerable: true });
    await expectCode(store.append(T, 'run-b', [call]), 'bad_request');
    await expect(store.append(T, 'run-b', [call])).rejects.toThrow(/invalid events: 0\.input/);
    expect((await store.read(T, 'run-b')).items).toEqual([]);
    await store.close();
  });

  it('an OTLP span attribute keyed __proto__, constructor or toString is kept in the stored span', async () => {
    const store = await openStore();
    const kv = (key: string, v: string) => ({ key, value: { stringValue: v } });
    const spans = decodeOtlpJson({
      resourceSpans: [
        {
          scopeSpans: [
            {
              spans: [
                {
                  traceId: 'd1'.repeat(16),
                  spanId: 'd1'.repeat(8),
                  name: 'work',
                  startTimeUnixNano: '1764576000000000000',
                  endTimeUnixNano: '1764576000000001000',
                  attributes: [kv('__proto__', 'p'), kv('constructor', 'c'), kv('toString', 't')],
                },
              ],
            },
          ],
        },
      ],
    });
    const result = await ingestOtlp(store, T, spans, { pulledAt: new Date(TS), isLiveRun: () => false });
    const page = await store.read(T, result.imported[0]!.trajectoryId);
    const data = (page.items[0] as unknown as { data: { attributes: Record<string, string> } }).data;
    expect(ownKeys(data, 'attributes')).toEqual(['__proto__', 'constructor', 'toString']);
    expect(Object.getOwnPropertyDescriptor(data.attributes, '__proto__')?.value).toBe('p');
    expect(data.attributes.constructor).toBe('c');
    expect(data.attributes.toString).toBe('t');
    await store.close();
  });

  it('a JSONL import keeps it too', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'proto-keys-jsonl-'));
    const file = path.join(dir, 'trace.jsonl');
    await writeFile(
      file,
      `${events('ext-1')
        .map((e) => JSON.stringify(e))
        .join('\n')}\n`,
    );
    const store = await openStore();
    for await (const trace of new JsonlTraceSource({ location: file }).pull()) {
      const imported = await importTrajectory(store, T, {
        provenance: { source: 'jsonl', externalId: trace.externalId, pulledAt: TS },
        events: trace.events,
      });
      const page = await store.read(T, imported.trajectoryId);
      expect(ownKeys(page.items[0], 'input')).toEqual(KEYS);
      expect(ownKeys(page.items[1], 'output')).toEqual(['__proto__']);
    }
    await store.close();
  });
});
