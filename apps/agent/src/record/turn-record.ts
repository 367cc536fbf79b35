// The turn's run record as the control plane holds it (it appends every segment; the agent only reports).
// A process that takes a lease reopens the record it was handed — verified from genesis by runrecord — and
// checks it names the lease's unit and grant set before it does anything: a record of another turn is
// `identity_mismatch`, one runrecord refuses is `record_refused` carrying runrecord's spec code.
import { decodeWire, type HostRecord, isRunRecordError, reopenRecord } from '@everdict/runrecord';
import { AgentError } from '../errors.js';

export interface RecordIdentity {
  readonly unitId: string;
  readonly grantsId: string;
}

/** What the lease's record says about where the turn is: never ran, running, parked or closed. */
export type TurnPhase = 'new' | 'active' | 'parked' | 'closed';

export function phaseOf(identity: RecordIdentity, wire: unknown | null): TurnPhase {
  if (wire === null) return 'new';
  let record: HostRecord;
  try {
    record = reopenRecord(decodeWire(wire));
  } catch (e) {
    if (isRunRecordError(e))
      throw new AgentError('record_refused', `reopen: ${e.code} — ${e.message}`, { recordCode: e.code });
    throw e;
  }
  if (record.unitId !== identity.unitId || record.grantsId !== identity.grantsId)
    throw new AgentError('identity_mismatch', 'the record names another unit or grant set than the lease', {
      record: { unitId: record.unitId, grantsId: record.grantsId },
      lease: identity,
    });
  return record.phase;
}
