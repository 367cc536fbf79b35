import { once } from 'node:events';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectCode } from '../contract.js';
import { TrajectoryStoreError } from '../errors.js';
import type { TraceEventDraft } from '../events.js';
import { sampleEvents } from '../fixtures.js';
import { listImported } from '../imports.js';
import { localBackend } from '../local/local-backend.js';
import { TrajectoryStore } from '../trajectory-store.js';
import { JsonlTraceSource } from './jsonl-source.js';
import { materializePull, type PulledTrace, type TraceSource } from './trace-source.js';

const otlpLine = {
  resourceSpans: [
    {
      resource: { attributes: [{ key: 'service.name', value: { stringValue: 'x' } }] },
      scopeSpans: [
        {
          spans: [
            {
              traceId: '5b8efff798038103d269b633813fc60c',
              spanId: 'eee19b7ec3c1b174',
              name: 'chat',
              kind: 3,
              startTimeUnixNano: '1764576000000000000',
              endTimeUnixNano: '1764576000250000000',
              attributes: [
                { key: 'gen_ai.operation.name', value: { stringValue: 'chat' } },
                { key: 'gen_ai.request.model', value: { stringValue: 'm' } },
                { key: 'gen_ai.usage.input_tokens', value: { intValue: '10' } },
                { key: 'gen_ai.usage.output_tokens', value: { intValue: 3 } },
              ],
            },
          ],
        },
      ],
    },
  ],
};

async function fixture(): Promise<{ dir: string; file: string }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pull-'));
  const a = sampleEvents('ext-a', 0, 4);
  const b = sampleEvents('ext-b', 10, 2);
  // Interleaved and out of order: the source regroups by run and orders by seq.
  const lines = [a[2], b[0], a[0], JSON.stringify(otlpLine), a[1], '', b[1], a[3]].map((l) =>
    typeof l === 'string' ? l : JSON.stringify(l),
  );
  const file = path.join(dir, 'export.jsonl');
  await writeFile(file, `${lines.join('\n')}\n`);
  return { dir, file };
}

describe('JSONL pull source', () => {
  it('materializes each external trace with its provenance, from a file and from a URL', async () => {
    const { dir, file } = await fixture();
    const store = new TrajectoryStore({ backend: localBackend({ root: path.join(dir, 'store') }) });
    const now = new Date('2026-12-03T00:00:00Z');
    const got = await materializePull(store, 'acme', new JsonlTraceSource({ location: file }), { now });
    expect(got.map((g) => [g.provenance.externalId, g.eventCount])).toEqual([
      ['ext-a', 4],
      ['ext-b', 2],
      ['5b8efff798038103d269b633813fc60c', 1],
    ]);
    const a = await store.read('acme', got[0]!.trajectoryId);
    expect(a.items.map(({ seq, runId: _r, ...rest }) => [seq, rest])).toEqual(
      sampleEvents('ext-a', 0, 4).map(({ seq: _s, runId: _r, ...rest }, i) => [i, rest]),
    );
    expect((await store.read('acme', got[2]!.trajectoryId)).items[0]).toMatchObject({
      type: 'llm_call',
      inputTokens: 10,
      outputTokens: 3,
    });

    const body = await readFile(file);
    const server = createServer((_req, res) => res.end(body)).listen(0, '127.0.0.1');
    await once(server, 'listening');
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/export.jsonl`;
    const later = new Date('2026-12-04T00:00:00Z');
    await materializePull(store, 'acme', new JsonlTraceSource({ location: url }), { now: later });
    server.close();
    expect(
      (await listImported(store, 'acme', { source: 'jsonl', externalId: 'ext-b' })).map(
        (i) => i.provenance.pulledAt,
      ),
    ).toEqual([now.toISOString(), later.toISOString()]);
    await store.close();
  });

  it('refuses a line that is neither, and an unreachable source', async () => {
    const { dir } = await fixture();
    const bad = path.join(dir, 'bad.jsonl');
    await writeFile(bad, `${JSON.stringify({ type: 'message' })}\n`);
    const store = new TrajectoryStore({ backend: localBackend({ root: path.join(dir, 'store') }) });
    const now = new Date();
    await expectCode(
      materializePull(store, 'acme', new JsonlTraceSource({ location: bad }), { now }),
      'bad_request',
    );
    await expectCode(
      materializePull(store, 'acme', new JsonlTraceSource({ location: path.join(dir, 'absent') }), { now }),
      'storage_unavailable',
    );
    await expectCode(
      materializePull(store, 'acme', new JsonlTraceSource({ location: 'http://127.0.0.1:9/x' }), { now }),
      'storage_unavailable',
    );
  });

  describe('a refused pull stores nothing', () => {
    const drafts = (externalId: string): TraceEventDraft[] =>
      sampleEvents(externalId, 0, 3).map(({ seq: _s, runId: _r, ...rest }) => rest as TraceEventDraft);
    /** A source of `first` (valid) and then whatever `then` yields or throws. */
    const sourceOf = (then: () => AsyncIterable<PulledTrace>): TraceSource => ({
      source: 'test',
      async *pull() {
        yield { externalId: 'first', events: drafts('first') };
        yield* then();
      },
    });
    async function stored(store: TrajectoryStore): Promise<string[]> {
      const paths: string[] = [];
      for (const prefix of ['trajectories/', 'imports/'])
        for await (const o of store.backend.list('acme', prefix)) paths.push(o.path);
      return paths;
    }

    it('a later trace whose event fails its schema: the earlier trace is not written', async () => {
      const store = new TrajectoryStore({
        backend: localBackend({ root: await mkdtemp(path.join(os.tmpdir(), 'pull-refused-')) }),
      });
      const bad = sourceOf(async function* () {
        yield { externalId: 'second', events: [{ type: 'message' } as unknown as TraceEventDraft] };
      });
      await expectCode(materializePull(store, 'acme', bad, { now: new Date() }), 'bad_request');
      expect(await listImported(store, 'acme', { source: 'test', externalId: 'first' })).toEqual([]);
      expect(await stored(store)).toEqual([]);
      await store.close();
    });

    it('a source that fails midway: the traces it yielded before are not written', async () => {
      const store = new TrajectoryStore({
        backend: localBackend({ root: await mkdtemp(path.join(os.tmpdir(), 'pull-refused-')) }),
      });
      const failing = sourceOf(async function* () {
        yield { externalId: 'second', events: drafts('second') };
        throw new TrajectoryStoreError('storage_unavailable', 'the source went away');
      });
      await expectCode(materializePull(store, 'acme', failing, { now: new Date() }), 'storage_unavailable');
      expect(await stored(store)).toEqual([]);
      // The same pull once the source answers: both traces, once each (a trace yielded twice is one copy).
      const ok = sourceOf(async function* () {
        yield { externalId: 'second', events: drafts('second') };
        yield { externalId: 'first', events: drafts('first') };
      });
      const got = await materializePull(store, 'acme', ok, { now: new Date('2026-12-04T00:00:00Z') });
      expect(got.map((g) => [g.provenance.externalId, g.eventCount])).toEqual([
        ['first', 3],
        ['second', 3],
        ['first', 3],
      ]);
      expect(got[2]).toEqual(got[0]);
      await store.close();
    });
  });
});
