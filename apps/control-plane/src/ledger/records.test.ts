// appendOps: an empty record (every analysis run at its settle) is opened from genesis, not decoded and
// verified from its wire form; anything else is still reopened, verified from genesis, its head checked.
import type { Operation, WireSegment } from '@everdict/runrecord';
import { describe, expect, it, vi } from 'vitest';
import type { RunRow } from './runs.js';

// decodeWire counted. The files of this package share one module graph (vitest isolate: false), so records.ts
// is loaded afresh here, after the mock, to be sure it sees it.
let decodes = 0;
vi.doMock('@everdict/runrecord', async (importOriginal) => {
  const actual = await importOriginal<typeof import('@everdict/runrecord')>();
  return {
    ...actual,
    decodeWire: (w: unknown) => {
      decodes++;
      return actual.decodeWire(w);
    },
  };
});
vi.resetModules();
const { appendOps, recordIdentity } = await import('./records.js');
const runrecord = await import('@everdict/runrecord'); // the module records.ts sees (its error class)

const at = '2026-12-03T00:00:00.000Z';
const identity = recordIdentity({
  tenant: 't1',
  kind: 'analysis',
  subject: { config: { fn: 'echo' } },
  placement: { where: 'inline', isolation: 'none' },
  attach: [],
});
const rowOf = (over: Partial<RunRow> = {}) =>
  ({
    id: 'run_1',
    tenant_id: 't1',
    unit_id: identity.unitId,
    grants_id: identity.grantsId,
    record_head: identity.genesisHead,
    record_length: 0,
    ...over,
  }) as unknown as RunRow;
const close = { op: 'close', reason: 'completed' } as const;

/** What appending gave before the fast path: the record decoded and verified from genesis, then appended. */
function reopened(row: RunRow, segments: WireSegment[], ops: readonly Operation[]) {
  const wire = {
    format: 'sandbox.runrecord/1',
    unit_id: row.unit_id,
    grants_id: row.grants_id,
    segments,
    head: row.record_head,
  };
  const host = runrecord.reopenRecord(runrecord.decodeWire(wire), { expectHead: row.record_head });
  const start = host.length;
  const rows = ops.map((op, i) => {
    const s = host.apply(op);
    return { idx: start + i, kind: s.kind, payload: runrecord.encodeSegment(s), head: s.head };
  });
  return { rows, head: host.head, length: host.length };
}

describe('appendOps', () => {
  it('opens an empty record at its genesis head without decoding or verifying it; same rows and head', () => {
    const row = rowOf();
    decodes = 0;
    const got = appendOps(row, [], [close], at);
    expect(decodes).toBe(0);
    const want = reopened(row, [], [close]);
    expect(got.head).toBe(want.head);
    expect(got.length).toBe(1);
    expect(got.rows.map((r) => ({ idx: r.idx, kind: r.kind, payload: r.payload, head: r.head }))).toEqual(
      want.rows,
    );
    expect(got.rows[0]).toMatchObject({ run_id: 'run_1', tenant_id: 't1', created_at: at });
  });

  it('an empty record whose head is not its genesis head is refused as before (nothing appended)', () => {
    const row = rowOf({ record_head: 'ab'.repeat(32) });
    const before = (() => {
      try {
        reopened(row, [], [close]);
        return null;
      } catch (e) {
        return e as Error;
      }
    })();
    expect(before).toBeInstanceOf(runrecord.RunRecordError);
    expect(() => appendOps(row, [], [close], at)).toThrow(before?.message);
  });

  it('a malformed identity is refused by the reopen, as before', () => {
    const row = rowOf({ unit_id: 'not-an-address' });
    expect(() => appendOps(row, [], [close], at)).toThrow(runrecord.RunRecordError);
  });

  it('a record with segments is still decoded and verified from genesis', () => {
    const row = rowOf();
    const first = appendOps(row, [], [{ op: 'execute', attestation: 'ab'.repeat(32) }], at);
    const segments = first.rows.map((r) => r.payload);
    const next = rowOf({ record_head: first.head, record_length: first.length });
    decodes = 0;
    const got = appendOps(next, segments, [close], at);
    expect(decodes).toBe(1);
    expect(got.head).toBe(reopened(next, segments, [close]).head);
    // A tampered head is refused.
    expect(() => appendOps(rowOf({ record_head: identity.genesisHead }), segments, [close], at)).toThrow(
      runrecord.RunRecordError,
    );
  });
});
