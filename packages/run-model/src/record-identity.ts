// What a run's record is bound to. A `sandbox.runrecord/1` record opens at H("sandbox.runrecord/1" ‖ unit_id ‖
// grants_id) (runrecord's `genesisHead`); for a run, unit_id = BLAKE3 of `unitDefinition(run)` (what is activated:
// tenant, kind, subject) and grants_id = BLAKE3 of `grantSet(run)` (what it may use: placement, attach,
// envelope). Both are canonical JSON, so anyone holding the run — as the control plane's GET /runs/:id returns
// it — recomputes both ids and checks that a record is this run's (the control plane's ledger/records.ts opens
// records from these; `everdict record verify` checks them).

import { canonicalJson } from './canonical-json.js';

/** The tag of a run's unit definition (`unitDefinition`). */
export const RUN_UNIT_TAG = 'everdict.run/1';
/** The tag of a run's grant set (`grantSet`). */
export const RUN_GRANTS_TAG = 'everdict.grants/1';

/** What of a run its record is bound to (as the control plane's GET /runs/:id returns it). */
export interface RecordBoundRun {
  readonly tenant: string;
  readonly kind: string;
  readonly subject: unknown;
  readonly placement: unknown;
  readonly attach: unknown;
  readonly envelope?: unknown;
}

/** The canonical JSON whose BLAKE3 is a run record's `unit_id`. */
export function unitDefinition(run: Pick<RecordBoundRun, 'tenant' | 'kind' | 'subject'>): string {
  return canonicalJson({ unit: RUN_UNIT_TAG, tenant: run.tenant, kind: run.kind, subject: run.subject });
}

/** The canonical JSON whose BLAKE3 is a run record's `grants_id` (`envelope` null when the run has none). */
export function grantSet(run: Pick<RecordBoundRun, 'placement' | 'attach' | 'envelope'>): string {
  return canonicalJson({
    grants: RUN_GRANTS_TAG,
    placement: run.placement,
    attach: run.attach,
    envelope: run.envelope ?? null,
  });
}
