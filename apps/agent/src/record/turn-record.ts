// The turn's run record, held by the agent process for one interval: reopened from the wire form the
// control plane handed over (verified from genesis by runrecord), checked against the lease's identity,
// then advanced — resume (if parked) → executed interval with its account → park or close. Every refusal
// of runrecord surfaces as AgentError `record_refused` carrying its spec code; the record is unchanged.
import {
  type Account,
  decodeWire,
  type HostRecord,
  isRunRecordError,
  openRecord,
  reopenRecord,
  type WireRecord,
} from '@everdict/runrecord';
import { AgentError } from '../errors.js';
import { ACTIVE_METER, activeEnergyUj, type ParkEnergy } from './energy.js';

export interface RecordIdentity {
  readonly unitId: string;
  readonly grantsId: string;
}

function guard<T>(what: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (isRunRecordError(e))
      throw new AgentError('record_refused', `${what}: ${e.code} — ${e.message}`, {
        recordCode: e.code,
        ...(e.index !== undefined ? { index: e.index } : {}),
      });
    throw e;
  }
}

export class TurnRecord {
  readonly #record: HostRecord;

  private constructor(record: HostRecord) {
    this.#record = record;
  }

  /** A new record, or the one the control plane holds (verified from genesis, identity checked). */
  static from(identity: RecordIdentity, wire: unknown | null): TurnRecord {
    if (wire === null) return new TurnRecord(guard('open', () => openRecord(identity)));
    const record = guard('reopen', () => reopenRecord(decodeWire(wire)));
    if (record.unitId !== identity.unitId || record.grantsId !== identity.grantsId)
      throw new AgentError('identity_mismatch', 'the record names another unit or grant set than the lease', {
        record: { unitId: record.unitId, grantsId: record.grantsId },
        lease: identity,
      });
    return new TurnRecord(record);
  }

  get phase(): 'active' | 'parked' | 'closed' {
    return this.#record.phase;
  }

  get length(): number {
    return this.#record.length;
  }

  get head(): string {
    return this.#record.head;
  }

  /** Un-parks: the offered transcript must be the parked one, the manifest this process's. */
  resume(transcript: string, manifest: string, energy: ParkEnergy): void {
    guard('resume', () =>
      this.#record.resume({
        snapshot: { transcript },
        manifest,
        idleUj: energy.idleUj,
        idleProvenance: energy.provenance,
      }),
    );
  }

  /** Seals one interval into an (unsigned) attestation with its account, and appends it. */
  executed(interval: {
    startedMs: number;
    endedMs: number;
    watts: number;
    journalRoot: string;
    outcome: 'succeeded' | 'failed' | 'yielded' | 'cancelled';
    account: Account;
  }): string {
    const { address } = guard('execute', () =>
      this.#record.executeInterval(
        {
          startedMs: BigInt(interval.startedMs),
          endedMs: BigInt(Math.max(interval.endedMs, interval.startedMs)),
          activeUj: activeEnergyUj(interval.startedMs, interval.endedMs, interval.watts),
          provenance: 'estimated',
          meter: ACTIVE_METER,
          journalRoot: interval.journalRoot,
          outcome: interval.outcome,
          exitCode: interval.outcome === 'failed' ? 1 : 0,
        },
        { account: interval.account },
      ),
    );
    return address;
  }

  park(transcript: string, manifest: string): void {
    guard('suspend', () => this.#record.suspend({ snapshot: { transcript }, manifest }));
  }

  close(reason: 'completed' | 'failed' | 'cancelled'): void {
    guard('close', () => this.#record.close(reason));
  }

  toWire(): WireRecord {
    return this.#record.toWire();
  }
}
