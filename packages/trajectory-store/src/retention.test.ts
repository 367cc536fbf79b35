import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sampleEvents } from './fixtures.js';
import { layout } from './keys.js';
import { localBackend } from './local/local-backend.js';
import { applyRetention, retentionVerdict } from './retention.js';
import { TrajectoryStore } from './trajectory-store.js';

const DAY = 86_400_000;
const NOW = new Date('2026-12-31T00:00:00.000Z');

describe('retention rule', () => {
  it('deletes exactly the expired objects that are not evidence; evidence is never deleted', () => {
    fc.assert(
      fc.property(
        fc.option(fc.integer({ min: 1, max: 400 }), { nil: undefined }),
        fc.array(fc.record({ ageMs: fc.integer({ min: 0, max: 800 * DAY }), evidence: fc.boolean() })),
        (days, objects) => {
          for (const o of objects) {
            const sealedAt = new Date(NOW.getTime() - o.ageMs).toISOString();
            const v = retentionVerdict({ sealedAt }, { trajectoryRetentionDays: days }, NOW, o.evidence);
            const expired = days !== undefined && o.ageMs >= days * DAY;
            expect(v.action === 'delete').toBe(expired && !o.evidence);
            if (o.evidence) expect(v.action).toBe('keep');
          }
        },
      ),
    );
  });

  it('names why it keeps', () => {
    const old = { sealedAt: '2026-01-01T00:00:00.000Z' };
    expect(retentionVerdict(old, {}, NOW, false)).toEqual({ action: 'keep', reason: 'no_policy' });
    expect(retentionVerdict(old, { trajectoryRetentionDays: null }, NOW, false).reason).toBe('no_policy');
    expect(retentionVerdict(old, { trajectoryRetentionDays: 400 }, NOW, false).reason).toBe(
      'within_retention',
    );
    expect(retentionVerdict(old, { trajectoryRetentionDays: 30 }, NOW, true).reason).toBe('evidence');
    expect(retentionVerdict(old, { trajectoryRetentionDays: 30 }, NOW, false)).toEqual({
      action: 'delete',
      reason: 'expired',
    });
  });
});

describe('a retention pass', () => {
  it('keeps a trajectory whose seal record does not parse, and goes on with the others', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'retention-'));
    const store = new TrajectoryStore({
      backend: localBackend({ root }),
      now: () => new Date('2026-01-01T00:00:00.000Z'),
    });
    for (const id of ['a-unreadable', 'b-expired']) {
      await store.append('acme', id, sampleEvents(id, 1, 2));
      await store.seal('acme', id);
    }
    await store.backend.put(
      { tenant: 'acme', path: layout.seal('a-unreadable') },
      Buffer.from('{"version":'),
    );
    const deleted = await applyRetention(store, 'acme', {
      trajectoryRetentionDays: 30,
      now: NOW,
      isEvidence: () => false,
    });
    expect(deleted.map((d) => d.trajectoryId)).toEqual(['b-expired']);
    expect(
      await store.backend.stat({ tenant: 'acme', path: layout.sealedObject('a-unreadable') }),
    ).not.toBeNull();
    expect((await store.head('acme', 'b-expired')).status).toBe('deleted');
    await store.close();
  });
});
