// The backend contract: the same behaviour, run against every ObjectBackend (local directory, S3).
//   import { describeBackendContract } from '@everdict/trajectory-store/contract';
//   describeBackendContract('local', async () => ({ open: async () => localBackend({ root }) }));
// `open()` returns a new backend over the same storage each call: a second call is a process restart.
// The trajectory behaviour is here; artifacts and object metadata are contract-artifacts.ts.

import { TraceEvent } from '@everdict/run-model';
import { blake3 } from '@noble/hashes/blake3.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { putArtifact, readArtifactBytes } from './artifacts.js';
import { canonicalJsonl } from './canonical.js';
import { describeArtifactContract } from './contract-artifacts.js';
import { type BackendFactory, type BackendHarness, expectCode, T } from './contract-support.js';
import { sampleEvents } from './fixtures.js';
import { importTrajectory, listImported } from './imports.js';
import { layout } from './keys.js';
import { applyRetention } from './retention.js';
import { TrajectoryStore } from './trajectory-store.js';

export type { BackendFactory, BackendHarness } from './contract-support.js';
export { expectCode } from './contract-support.js';

function expectedDigest(events: readonly unknown[]): string {
  return `blake3:${bytesToHex(blake3(new TextEncoder().encode(canonicalJsonl(events))))}`;
}

async function readAll(store: TrajectoryStore, tenant: string, id: string, limit = 7) {
  const items = [];
  for (let offset = 0; ; ) {
    const page = await store.read(tenant, id, { offset, limit });
    if (page.items.length === 0) return items;
    items.push(...page.items);
    offset = page.nextOffset;
  }
}

export function describeBackendContract(name: string, factory: BackendFactory): void {
  describe(`trajectory store on ${name}`, () => {
    let harness: BackendHarness;
    let store: TrajectoryStore;
    const opened: TrajectoryStore[] = [];
    const restart = async (clock?: () => Date) => {
      const s = new TrajectoryStore({
        backend: await harness.open(),
        tailPollMs: 50,
        ...(clock ? { now: clock } : {}),
      });
      opened.push(s);
      return s;
    };

    beforeEach(async () => {
      harness = await factory();
      store = await restart();
    });
    afterEach(async () => {
      for (const s of opened.splice(0)) await s.close();
      await harness.cleanup?.();
    });

    describeArtifactContract({ store: () => store, harness: () => harness, restart: () => restart() });

    it('appends in order and reads pages by offset', async () => {
      const events = sampleEvents('run-1', 1, 25);
      expect(await store.append(T, 'run-1', events.slice(0, 10))).toEqual({
        appended: 10,
        duplicates: 0,
        eventCount: 10,
        lastSeq: 10,
      });
      await store.append(T, 'run-1', events.slice(10));
      const page = await store.read(T, 'run-1', { offset: 8, limit: 5 });
      expect(page).toMatchObject({ nextOffset: 13, eventCount: 25, sealed: false });
      expect(page.items).toEqual(events.slice(8, 13));
      expect(await readAll(store, T, 'run-1')).toEqual(events);
      expect(await store.read(T, 'run-1', { offset: 25 })).toMatchObject({ items: [], nextOffset: 25 });
      await expectCode(store.read(T, 'run-1', { offset: -1 }), 'bad_request');
    });

    it('stores a re-sent event once, also after a restart; other content under a stored seq is refused', async () => {
      const events = sampleEvents('run-2', 0, 12);
      await store.append(T, 'run-2', events.slice(0, 8));
      expect(await store.append(T, 'run-2', events.slice(4, 12))).toMatchObject({
        appended: 4,
        duplicates: 4,
      });
      const again = await restart();
      expect(await again.append(T, 'run-2', events)).toMatchObject({
        appended: 0,
        duplicates: 12,
        eventCount: 12,
      });
      expect(await readAll(again, T, 'run-2')).toEqual(events);
      const changed = { ...events[3]!, ts: '2030-01-01T00:00:00.000Z' };
      await expectCode(
        again.append(T, 'run-2', [changed, ...sampleEvents('run-2', 12, 1)]),
        'event_conflict',
      );
      expect((await again.head(T, 'run-2')).eventCount).toBe(12); // the refused batch wrote nothing
    });

    it('refuses a seq below the last that was never stored, another run, and invalid events', async () => {
      await store.append(T, 'run-3', [sampleEvents('run-3', 2, 1)[0], sampleEvents('run-3', 5, 1)[0]]);
      await expectCode(store.append(T, 'run-3', sampleEvents('run-3', 4, 1)), 'out_of_order');
      await expectCode(store.append(T, 'run-3', sampleEvents('other', 9, 1)), 'bad_request');
      await expectCode(
        store.append(T, 'run-3', [{ type: 'message', seq: 9, runId: 'run-3' }]),
        'bad_request',
      );
      await expectCode(
        store.append(T, 'run-3', sampleEvents('run-3', 9, 1).concat([{} as never])),
        'bad_request',
      );
      expect(await store.head(T, 'run-3')).toMatchObject({ eventCount: 2, lastSeq: 5 });
    });

    it('tails a live trajectory as it grows and ends at the seal', async () => {
      const events = sampleEvents('run-4', 0, 30);
      await store.append(T, 'run-4', events.slice(0, 10));
      const seen: number[] = [];
      const tail = (async () => {
        for await (const item of store.tail(T, 'run-4', { offset: 5, pageSize: 4 })) {
          seen.push(item.offset);
          expect(item.event).toEqual(events[item.offset]);
        }
      })();
      await store.append(T, 'run-4', events.slice(10, 20));
      await store.append(T, 'run-4', events.slice(20));
      await store.seal(T, 'run-4');
      await tail;
      expect(seen).toEqual(Array.from({ length: 25 }, (_, i) => 5 + i));
    });

    it('a tail in another store instance sees appends through storage', async () => {
      const reader = await restart();
      const events = sampleEvents('run-4b', 0, 6);
      const got: number[] = [];
      const tail = (async () => {
        for await (const item of reader.tail(T, 'run-4b')) got.push(item.event.seq);
      })();
      await store.append(T, 'run-4b', events.slice(0, 3));
      await store.append(T, 'run-4b', events.slice(3));
      await store.seal(T, 'run-4b');
      await tail;
      expect(got).toEqual([0, 1, 2, 3, 4, 5]);
    });

    it('seals to BLAKE3 of the canonical JSONL, once, and refuses appends after', async () => {
      const events = sampleEvents('run-5', 1, 40);
      for (let i = 0; i < 40; i += 9) await store.append(T, 'run-5', events.slice(i, i + 9));
      const sealed = await store.seal(T, 'run-5', { sealedAt: new Date('2026-12-02T00:00:00Z') });
      expect(sealed.ref).toEqual({
        ref: 'run-5',
        eventCount: 40,
        sealedAt: '2026-12-02T00:00:00.000Z',
        digest: expectedDigest(events),
      });
      expect((await store.seal(T, 'run-5')).seal).toEqual(sealed.seal);
      await expectCode(store.append(T, 'run-5', sampleEvents('run-5', 41, 1)), 'trajectory_sealed');
      await expectCode(store.append(T, 'run-5', events.slice(0, 1)), 'trajectory_sealed');
      const again = await restart();
      await expectCode(again.append(T, 'run-5', sampleEvents('run-5', 41, 1)), 'trajectory_sealed');
      expect(await readAll(again, T, 'run-5')).toEqual(events);
      expect(await again.read(T, 'run-5', { offset: 17, limit: 3 })).toMatchObject({
        items: events.slice(17, 20),
        nextOffset: 20,
        sealed: true,
      });
      expect(await again.verify(T, 'run-5', sealed.ref.digest)).toMatchObject({ ok: true, eventCount: 40 });
      const empty = await again.seal(T, 'never-written');
      expect(empty.ref).toMatchObject({ eventCount: 0, digest: expectedDigest([]) });
    });

    it('seals to the same digest in the writing process and after a restart', async () => {
      const events = sampleEvents('run-5b', 0, 30);
      for (const id of ['run-5b', 'run-5c']) {
        const own = events.map((e) => ({ ...e, runId: id }));
        for (let i = 0; i < 30; i += 7) await store.append(T, id, own.slice(i, i + 7));
      }
      const inProcess = await store.seal(T, 'run-5b');
      const restarted = await (await restart()).seal(T, 'run-5c');
      expect(inProcess.ref.digest).toBe(expectedDigest(events.map((e) => ({ ...e, runId: 'run-5b' }))));
      expect(restarted.ref.digest).toBe(expectedDigest(events.map((e) => ({ ...e, runId: 'run-5c' }))));
      expect(restarted.seal.bytes).toBe(inProcess.seal.bytes + 30 * ('run-5c'.length - 'run-5b'.length));
    });

    it('refuses to seal chunks that changed after they were written', async () => {
      const backend = await harness.open();
      const chunkOf = async (id: string) => {
        for await (const o of backend.list(T, `${layout.chunksDir(id)}/`)) return o.path;
        throw new Error('no chunk');
      };
      await store.append(T, 'run-5d', sampleEvents('run-5d', 0, 5));
      const { gzipSync } = await import('node:zlib');
      const forged = sampleEvents('run-5d', 0, 5).map((e) => ({ ...e, ts: '2031-01-01T00:00:00.000Z' }));
      await backend.put({ tenant: T, path: await chunkOf('run-5d') }, gzipSync(canonicalJsonl(forged)));
      await expectCode(store.seal(T, 'run-5d'), 'integrity_failed'); // the writer knows what it wrote
      await store.append(T, 'run-5e', sampleEvents('run-5e', 0, 5));
      await backend.put({ tenant: T, path: await chunkOf('run-5e') }, Buffer.from('not gzip'));
      const other = await restart();
      await expectCode(other.seal(T, 'run-5e'), 'integrity_failed'); // a restarted one inflates and checks
      await expectCode(other.read(T, 'run-5e'), 'integrity_failed');
      expect((await other.head(T, 'run-5e')).status).toBe('live'); // a refused seal leaves it as it was
      await backend.close();
    });

    it('reports a sealed object whose bytes no longer match its digest, never serves it', async () => {
      const events = sampleEvents('run-6', 0, 50);
      await store.append(T, 'run-6', events);
      const { ref } = await store.seal(T, 'run-6');
      const backend = await harness.open();
      const key = { tenant: T, path: layout.sealedObject('run-6') };
      const bytes = Buffer.from((await backend.get(key))!);
      bytes[Math.floor(bytes.length / 2)]! ^= 0x01;
      await backend.put(key, bytes);
      await backend.close();
      const reader = await restart();
      await expectCode(reader.read(T, 'run-6', { offset: 0, limit: 50 }), 'integrity_failed');
      const verdict = await reader.verify(T, 'run-6', ref.digest);
      expect(verdict.ok).toBe(false);
      expect(verdict.actual).not.toBe(ref.digest);
      expect((await store.verify(T, 'run-6', `blake3:${'0'.repeat(64)}`)).ok).toBe(false);
    });

    it('scopes every key by tenant', async () => {
      await store.append('t-a', 'shared-id', sampleEvents('shared-id', 0, 3));
      expect(await store.read('t-b', 'shared-id')).toMatchObject({ items: [], eventCount: 0 });
      await store.append('t-b', 'shared-id', sampleEvents('shared-id', 0, 1));
      expect((await store.head('t-a', 'shared-id')).eventCount).toBe(3);
      const art = await putArtifact(store.backend, 't-a', { path: 'out.txt', body: Buffer.from('secret') });
      await expectCode(readArtifactBytes(store.backend, 't-b', art.address), 'not_found');
      await expectCode(store.read('', 'x'), 'bad_request');
    });

    it('imports trajectories with provenance that survives a restart', async () => {
      const drafts = sampleEvents('x', 0, 5).map(({ seq: _s, runId: _r, ...d }) => d);
      const provenance = { source: 'otlp', externalId: 'abc123', pulledAt: '2026-12-01T00:00:00.000Z' };
      const first = await importTrajectory(store, T, { provenance, events: drafts, idempotencyKey: 'k1' });
      const same = await importTrajectory(store, T, { provenance, events: drafts, idempotencyKey: 'k1' });
      expect(same).toEqual(first);
      await importTrajectory(store, T, {
        provenance: { ...provenance, pulledAt: '2026-12-01T01:00:00.000Z' },
        events: drafts.slice(0, 2),
      });
      const again = await restart();
      const items = await listImported(again, T, { source: 'otlp', externalId: 'abc123' });
      expect(items.map((i) => [i.provenance.pulledAt, i.eventCount])).toEqual([
        ['2026-12-01T00:00:00.000Z', 5],
        ['2026-12-01T01:00:00.000Z', 2],
      ]);
      expect(await listImported(again, 'other-tenant', { source: 'otlp', externalId: 'abc123' })).toEqual([]);
      const events = await readAll(again, T, first.trajectoryId);
      expect(events.map((e) => TraceEvent.parse(e))).toEqual(
        drafts.map((d, i) => ({ ...d, seq: i, runId: first.trajectoryId })),
      );
      expect((await again.head(T, first.trajectoryId)).provenance).toEqual(provenance);
    });

    it('numbers drafts after the last event, idempotent per batch key across a restart', async () => {
      await store.append(T, 'run-7', sampleEvents('run-7', 0, 3));
      const drafts = sampleEvents('x', 0, 2).map(({ seq: _s, runId: _r, ...d }) => d);
      const key = 'a'.repeat(32);
      expect(await store.appendDrafts(T, 'run-7', drafts, key)).toMatchObject({ appended: 2, lastSeq: 4 });
      const again = await restart();
      expect(await again.appendDrafts(T, 'run-7', drafts, key)).toMatchObject({ appended: 0, eventCount: 5 });
      expect((await again.read(T, 'run-7', { offset: 3 })).items.map((e) => [e.seq, e.runId])).toEqual([
        [3, 'run-7'],
        [4, 'run-7'],
      ]);
    });

    it('retention deletes expired sealed trajectories except evidence, and records each deletion', async () => {
      const day = 86_400_000;
      const now = new Date('2026-12-31T00:00:00Z');
      for (const [id, ageDays] of [
        ['old-plain', 40],
        ['old-evidence', 90],
        ['young', 5],
      ] as const) {
        await store.append(T, id, sampleEvents(id, 0, 3));
        await store.seal(T, id, { sealedAt: new Date(now.getTime() - ageDays * day) });
      }
      await store.append(T, 'live-old', sampleEvents('live-old', 0, 1));
      const asked: string[] = [];
      const deletions = await applyRetention(store, T, {
        trajectoryRetentionDays: 30,
        now,
        isEvidence: (c) => {
          asked.push(c.trajectoryId);
          return c.trajectoryId === 'old-evidence';
        },
      });
      expect(asked.sort()).toEqual(['old-evidence', 'old-plain']);
      expect(deletions).toEqual([
        expect.objectContaining({
          tenant: T,
          trajectoryId: 'old-plain',
          reason: 'retention',
          retentionDays: 30,
        }),
      ]);
      const again = await restart();
      await expectCode(again.read(T, 'old-plain'), 'trajectory_deleted');
      await expectCode(again.append(T, 'old-plain', sampleEvents('old-plain', 9, 1)), 'trajectory_sealed');
      expect((await again.verify(T, 'old-evidence')).ok).toBe(true);
      expect((await again.head(T, 'young')).status).toBe('sealed');
      expect((await again.head(T, 'live-old')).status).toBe('live');
      expect(await applyRetention(again, T, { now, isEvidence: () => false })).toEqual([]);
    });
  });
}
