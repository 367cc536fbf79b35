// The energy sessions' records hold so far, for any number of sessions in two statements: every listed
// record's segments in one read, every listed run's attestation bodies in another — then each record is
// verified from genesis in memory, as `readRecord` (GET /runs/:id/record) verifies it: the same wire form,
// the same bundle (the run's stored bodies in wire form; a legacy body left out), the row's head expected.
// A record that does not verify counts 0 — so a tampered record adds nothing to a burn, listed or not.
import { decodeAttestationBody, verifyWire, type WireAttestations } from '@everdict/runrecord';
import type { Executor } from '../db/tx.js';
import { segmentsOfMany } from '../ledger/records.js';
import type { RunRow } from '../ledger/runs.js';

type RecordedRun = Pick<RunRow, 'id' | 'unit_id' | 'grants_id' | 'record_head' | 'record_length'>;

/** Every listed run's attestation bodies in one read (run id → address → body), as `readRecord` bundles them. */
async function bundlesOf(ex: Executor, runIds: readonly string[]): Promise<Map<string, WireAttestations>> {
  const out = new Map<string, WireAttestations>(runIds.map((id) => [id, {}]));
  const rows = await ex
    .selectFrom('attestations')
    .select(['run_id', 'address', 'body'])
    .where('run_id', 'in', [...runIds])
    .orderBy('created_at')
    .execute();
  for (const r of rows) {
    const bundle = out.get(r.run_id);
    if (!bundle) continue;
    try {
      decodeAttestationBody(r.body);
      bundle[r.address] = r.body as unknown as WireAttestations[string];
    } catch {
      // legacy body shape: not bundled (its segment counts as unresolved, never as zero energy)
    }
  }
  return out;
}

/**
 * Each run's recorded energy (runrecord's cost, active + idle, µJ): run id → µJ. An empty record holds none
 * (nothing is read for it); a record that does not verify counts 0. No statement when no run has a record.
 */
export async function recordedEnergy(
  ex: Executor,
  runs: readonly RecordedRun[],
): Promise<Map<string, bigint>> {
  const out = new Map<string, bigint>(runs.map((r) => [r.id, 0n]));
  const recorded = runs.filter((r) => r.record_length > 0);
  if (recorded.length === 0) return out;
  const ids = recorded.map((r) => r.id);
  const [segments, bundles] = await Promise.all([segmentsOfMany(ex, ids), bundlesOf(ex, ids)]);
  for (const run of recorded) {
    const attestations = bundles.get(run.id) ?? {};
    const wire = {
      format: 'sandbox.runrecord/1',
      unit_id: run.unit_id,
      grants_id: run.grants_id,
      segments: segments.get(run.id) ?? [],
      head: run.record_head,
      ...(Object.keys(attestations).length > 0 ? { attestations } : {}),
    };
    const v = verifyWire(wire, { expectHead: run.record_head });
    out.set(run.id, v.ok ? v.cost.totalUj : 0n);
  }
  return out;
}
