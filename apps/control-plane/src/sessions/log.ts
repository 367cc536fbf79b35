// A session's trajectory: every exec (its command and result) and every terminal byte in and out, appended
// to the run's trajectory. 64 MiB per session: the bytes are counted on the session row (so replicas
// share the count); past the cap one `everdict/truncated` marker is written and further output dropped.
// Only what was stored is counted: an append the store refuses gives its bytes back (a marker it refused is
// written by the next append) and throws the store's refusal, so no caller answers for a record that is not
// there. The trajectory is sealed when the session settles.
import { randomBytes } from 'node:crypto';
import type { TraceEventDraft } from '@everdict/trajectory-store';
import { sql } from 'kysely';
import type { Executor } from '../db/tx.js';
import type { RunTrajectories } from '../trajectory/run-trajectories.js';

export const TRAJECTORY_CAP_BYTES = 64 * 1024 * 1024;

export class SessionLog {
  constructor(
    private readonly db: Executor,
    private readonly trajectories: RunTrajectories | null,
    private readonly capBytes: number = TRAJECTORY_CAP_BYTES,
    private readonly onError: (e: unknown) => void = () => undefined,
  ) {}

  /**
   * Appends drafts weighing `bytes`; false when the cap was reached (a marker is written once). Throws the
   * store's refusal (`storage_unavailable` when it does not answer) with the bytes uncounted.
   */
  async append(tenant: string, runId: string, drafts: TraceEventDraft[], bytes: number): Promise<boolean> {
    if (!this.trajectories || drafts.length === 0) return true;
    const counted = await sql<{ trajectory_bytes: string | number; trajectory_truncated: boolean }>`
      UPDATE sessions SET trajectory_bytes = trajectory_bytes + ${bytes}::bigint,
        trajectory_truncated = trajectory_bytes + ${bytes}::bigint > ${this.capBytes}::bigint
      WHERE tenant_id = ${tenant} AND run_id = ${runId} AND NOT trajectory_truncated
      RETURNING trajectory_bytes, trajectory_truncated`.execute(this.db);
    const row = counted.rows[0];
    if (!row) return false; // already truncated, or the session is gone
    const out = row.trajectory_truncated
      ? [
          {
            type: 'extension',
            ts: new Date().toISOString(),
            ext: 'everdict/truncated',
            data: { capBytes: this.capBytes, reason: 'session trajectory cap reached: later output dropped' },
          } as TraceEventDraft,
        ]
      : drafts;
    try {
      await this.trajectories.appendDrafts(tenant, runId, out, randomBytes(16).toString('hex'));
    } catch (e) {
      await sql`UPDATE sessions SET trajectory_bytes = trajectory_bytes - ${bytes}::bigint,
          trajectory_truncated = trajectory_truncated AND NOT ${row.trajectory_truncated}::boolean
        WHERE tenant_id = ${tenant} AND run_id = ${runId}`
        .execute(this.db)
        .catch(this.onError);
      throw e;
    }
    return !row.trajectory_truncated;
  }

  exec(
    tenant: string,
    runId: string,
    actor: string,
    command: readonly string[],
    result: { exitCode: number | null; stdout: string; stderr: string; truncated: boolean; outcome: string },
  ): Promise<boolean> {
    const callId = `exec_${randomBytes(8).toString('hex')}`;
    const ts = new Date().toISOString();
    const drafts: TraceEventDraft[] = [
      { type: 'tool_call', ts, callId, tool: 'exec', input: { command: [...command], actor } },
      {
        type: 'tool_result',
        ts,
        callId,
        output: result,
        ...(result.exitCode === 0 ? {} : { isError: true }),
      },
    ];
    const bytes = command.join(' ').length + result.stdout.length + result.stderr.length;
    return this.append(tenant, runId, drafts, bytes);
  }

  /** Terminal traffic: `dir` in (stdin) or out (output), raw bytes base64 in an `everdict/terminal` event. */
  terminal(tenant: string, runId: string, dir: 'in' | 'out', chunk: Uint8Array): Promise<boolean> {
    const draft = {
      type: 'extension',
      ts: new Date().toISOString(),
      ext: 'everdict/terminal',
      data: { dir, data: Buffer.from(chunk).toString('base64') },
    } as TraceEventDraft;
    return this.append(tenant, runId, [draft], chunk.byteLength);
  }

  /**
   * Terminal bytes that were shown but could not be recorded (the store refused their append): one
   * `everdict/terminal-gap` event saying how many, each way, since when, so the trajectory does not read as
   * complete.
   */
  terminalGap(
    tenant: string,
    runId: string,
    lost: { in: number; out: number; since: string },
    reason: string,
  ): Promise<boolean> {
    const draft = {
      type: 'extension',
      ts: new Date().toISOString(),
      ext: 'everdict/terminal-gap',
      data: { bytesIn: lost.in, bytesOut: lost.out, since: lost.since, reason },
    } as TraceEventDraft;
    return this.append(tenant, runId, [draft], 0);
  }

  async seal(tenant: string, runId: string): Promise<void> {
    await this.trajectories?.seal(tenant, runId).catch(this.onError);
  }
}
