// The sessions service: open (through the one gate, on the session lane), exec (exec.ts), touch, close, list,
// and terminal tickets. Park/resume are in park.ts, the reaper in reaper.ts, the WebSocket in terminal.ts.
import { extendExpiry } from '@everdict/run-model';
import { withTx } from '../db/tx.js';
import { ControlPlaneError, notFound } from '../errors.js';
import { findRun, rowToView, selectRunRows } from '../ledger/runs.js';
import type { RunView } from '../ledger/views.js';
import { asControlPlaneError, validationRefusal } from '../services/boundary.js';
import type { Deps } from '../services/context.js';
import { createRunTx, transitionTx } from '../services/lifecycle.js';
import type { AdmissionView, CreateRunContext, CreateRunInput, Principal } from '../services/types.js';
import { type ComputeSources, computeOf, handleOf, placeCompute, provisionSession } from './compute.js';
import { execInSession } from './exec.js';
import type { SessionLog } from './log.js';
import { sessionPolicy } from './policy.js';
import { dueAt, openForTerminal, requireChannel, sessionOf } from './rows.js';
import { type SettleContext, settleSession } from './settle.js';
import type { SnapshotStore } from './snapshots.js';
import { mintTicket, redeemTicket } from './tickets.js';
import {
  DEFAULT_IDLE_TIMEOUT_SEC,
  type ExecView,
  OpenSandboxInput,
  type SessionView,
  type TicketView,
  TouchInput,
} from './types.js';
import { sessionView, sessionViews } from './view.js';

/** The channels a session exposes when its opener names none. */
const SESSION_CHANNELS: ['exec', 'terminal'] = ['exec', 'terminal'];

const who = (p: Principal) => ({ tenant: p.tenantId, actor: p.actor });
const _utf8 = (b: Uint8Array) => Buffer.from(b).toString('utf8');

export interface SessionCore extends SettleContext, ComputeSources {
  readonly deps: Deps;
  readonly snapshots: SnapshotStore;
  readonly log: SessionLog;
  /**
   * A write in this process moved a session's idle deadline earlier with no fact to say so (a command ended or
   * was refused): the reaper's next tick sweeps (reaper.ts).
   */
  readonly deadlineMoved?: () => void;
}

/** A cheap look at the tenant's session pool (the gate decides; this only spares a doomed provision). */
async function poolLooksFull(db: Deps['db'], tenant: string): Promise<boolean> {
  const row = await db
    .selectFrom('adm_tenants')
    .select(['sessions', 'policy'])
    .where('tenant', '=', tenant)
    .executeTakeFirst();
  const max = (row?.policy as { session?: { maxSessions?: number } } | undefined)?.session?.maxSessions;
  return row !== undefined && typeof max === 'number' && row.sessions >= max;
}

/** Whether a POST /runs body asks for a session sandbox (then the sessions module opens it). */
export function isSessionSandbox(input: unknown): input is CreateRunInput {
  const i = input as { kind?: unknown; lifetime?: unknown } | null;
  return typeof i === 'object' && i !== null && i.kind === 'sandbox' && i.lifetime === 'session';
}

export class SessionService {
  constructor(readonly core: SessionCore) {}

  /** POST /sandboxes. */
  open(p: Principal, raw: unknown, ctx: CreateRunContext = {}) {
    const input = asControlPlaneError(() => OpenSandboxInput.parse(raw));
    const run: CreateRunInput = {
      kind: 'sandbox',
      subject: { image: input.image ?? 'default' },
      lifetime: 'session',
      attach: input.attach ?? SESSION_CHANNELS,
      ...(input.placement ? { placement: input.placement } : {}),
      ttlSec: input.ttlSec,
      ...(input.requestId ? { requestId: input.requestId } : {}),
    };
    return this.#open(p, run, input.ttlSec, input.idleTimeoutSec, ctx);
  }

  /** POST /runs with kind sandbox, lifetime session: the same path (idle timeout 15 min, or the TTL). */
  openRun(p: Principal, input: CreateRunInput, ctx: CreateRunContext = {}) {
    const now = this.core.deps.clock().getTime();
    const ttlSec =
      input.ttlSec ?? (input.expiresAt ? Math.ceil((Date.parse(input.expiresAt) - now) / 1000) : undefined);
    if (ttlSec === undefined || !(ttlSec > 0))
      throw new ControlPlaneError('bad_request', 'a session run needs ttlSec (or a future expiresAt)');
    // The channels a session gives when none is named (as POST /sandboxes): exec and the terminal.
    const attach = input.attach && input.attach.length > 0 ? input.attach : SESSION_CHANNELS;
    return this.#open(p, { ...input, attach }, ttlSec, Math.min(ttlSec, DEFAULT_IDLE_TIMEOUT_SEC), ctx);
  }

  async #open(
    p: Principal,
    input: CreateRunInput,
    ttlSec: number,
    idleTimeoutSec: number,
    ctx: CreateRunContext,
  ): Promise<{ run: RunView; admission: AdmissionView }> {
    const { deps } = this.core;
    const placement = input.placement ?? { where: 'driver', isolation: 'process' };
    const image = (input.subject as { image?: string } | undefined)?.image ?? 'default';
    // The embedded driver, or a connected runner offering the placement's driver and the image (422 if none).
    const compute = await placeCompute(this.core, p.tenantId, placement, image);
    const policy = await sessionPolicy(deps.db, p.tenantId);
    // A range refusal in the one shape (services/boundary.ts): the body field named, as the edge names it.
    if (ttlSec > policy.maxSessionTtlSec)
      throw validationRefusal(
        [
          {
            code: 'too_big',
            origin: 'number',
            maximum: policy.maxSessionTtlSec,
            inclusive: true,
            path: ['ttlSec'],
            message: `Too big: expected number to be <=${policy.maxSessionTtlSec} (the tenant's maxSessionTtlSec)`,
            input: ttlSec,
          },
        ],
        { in: 'body' },
      );
    // The run id is chosen first, so the compute can be provisioned (labelled with it) BEFORE any
    // transaction: no connection or admission lock is held while a sandbox comes up. A crash between the
    // provision and the commit leaves a labelled sandbox with no row, which the start-up reap removes.
    const runId = deps.ids('run');
    const withId = { ...deps, ids: (prefix: string) => (prefix === 'run' ? runId : deps.ids(prefix)) };
    let handle: Awaited<ReturnType<typeof provisionSession>> | null = null;
    let kept = false;
    try {
      // A pool already full is refused by the gate below without a sandbox brought up for nothing.
      if (!(await poolLooksFull(deps.db, p.tenantId)))
        handle = await provisionSession(compute, p.tenantId, runId, image);
      // One transaction: the gate's session slot, the run started and the session row commit together — a
      // refusal or a failed provision leaves nothing behind (the compute is disposed below).
      const out = await withTx(deps.db, async (tx) => {
        const created = await createRunTx(tx, withId, who(p), { ...input, placement }, ctx);
        if (created.admission.decision === 'duplicate')
          return { run: rowToView(created.row), admission: created.admission };
        handle ??= await provisionSession(compute, p.tenantId, runId, image); // a slot freed meanwhile
        const { row } = await transitionTx(tx, deps, p.tenantId, runId, { type: 'start' });
        const now = deps.clock();
        await tx
          .insertInto('sessions')
          .values({
            tenant_id: p.tenantId,
            run_id: runId,
            created_by: p.actor,
            image,
            state: 'open',
            idle_timeout_sec: idleTimeoutSec,
            opened_at: now,
            expires_at: row.expires_at ?? new Date(now.getTime() + ttlSec * 1000),
            idle_deadline: new Date(now.getTime() + idleTimeoutSec * 1000),
            last_activity_at: now,
            holder: compute.holder,
            handle: JSON.stringify(handle),
          })
          .execute();
        return { run: rowToView(row), admission: created.admission, kept: true };
      });
      kept = 'kept' in out;
      return { run: out.run, admission: out.admission };
    } finally {
      if (handle && !kept) await compute.driver.dispose(handle).catch(() => undefined);
    }
  }

  /** POST /sandboxes/:id/exec: runs to completion; 1 MiB kept per stream (exec.ts). */
  exec(p: Principal, runId: string, raw: unknown): Promise<ExecView> {
    return execInSession(this.core, p, runId, raw);
  }

  /** POST /sandboxes/:id/touch: extends the expiry up to the tenant's maxSessionTtlSec from now; never shortens. */
  async touch(p: Principal, runId: string, raw: unknown): Promise<SessionView> {
    const input = asControlPlaneError(() => TouchInput.parse(raw));
    const { deps } = this.core;
    const row = await withTx(deps.db, async (tx) => {
      const now = deps.clock();
      const { session } = await sessionOf(tx, p, runId, { lock: true, at: now });
      const policy = await sessionPolicy(tx, p.tenantId);
      const next = new Date(
        extendExpiry(
          session.expires_at.toISOString(),
          input.ttlSec,
          policy.maxSessionTtlSec,
          now.toISOString(),
        ),
      );
      await tx
        .updateTable('runs')
        .set({ expires_at: next })
        .where('tenant_id', '=', p.tenantId)
        .where('id', '=', runId)
        .execute();
      await tx
        .updateTable('sessions')
        .set({ expires_at: next })
        .where('tenant_id', '=', p.tenantId)
        .where('run_id', '=', runId)
        .execute();
      // A touch extends the expiry only: it is no traffic in the sandbox (idle is counted from exec and
      // terminal traffic alone), so a client touching for TTL does not keep a forgotten shell from idling.
      return tx
        .selectFrom('sessions')
        .selectAll()
        .where('tenant_id', '=', p.tenantId)
        .where('run_id', '=', runId)
        .executeTakeFirstOrThrow();
    });
    const run = await findRun(deps.db, p.tenantId, runId);
    if (!run) throw notFound('run', runId);
    const { sessionUsdPerHour } = await sessionPolicy(deps.db, p.tenantId);
    return sessionView(deps.db, row, run, sessionUsdPerHour, deps.clock());
  }

  /**
   * POST /sandboxes/:id/close: disposed and settled succeeded (endReason closed). A session already past its
   * expiry or idle deadline had ended before the close (the reaper had not swept it yet): decided under the
   * row lock, it settles with that reason (`expired` | `idle`), as the reaper would have — exactly once.
   */
  async close(p: Principal, runId: string): Promise<RunView> {
    await sessionOf(this.core.deps.db, p, runId);
    await settleSession(this.core, p.tenantId, runId, 'closed', {
      decide: (s) => dueAt(s, this.core.deps.clock()) ?? 'closed',
    });
    return this.#run(p, runId);
  }

  /** GET /sandboxes: the tenant's open and parked sessions, with TTL left and what they burn. */
  async list(p: Principal): Promise<SessionView[]> {
    const { deps } = this.core;
    const sessions = await deps.db
      .selectFrom('sessions')
      .selectAll()
      .where('tenant_id', '=', p.tenantId)
      .orderBy('opened_at', 'desc')
      .limit(1000)
      .execute();
    if (sessions.length === 0) return [];
    const runs = new Map(
      (
        await selectRunRows(deps.db)
          .selectAll()
          .where('tenant_id', '=', p.tenantId)
          .where(
            'id',
            'in',
            sessions.map((s) => s.run_id),
          )
          .where('status', 'not in', ['succeeded', 'failed', 'cancelled'])
          .execute()
      ).map((r) => [r.id, r]),
    );
    const { sessionUsdPerHour } = await sessionPolicy(deps.db, p.tenantId);
    const listed = sessions.flatMap((s) => {
      const run = runs.get(s.run_id);
      return run ? [[s, run] as const] : [];
    });
    // Their records in one batch (verified in memory, as each GET /sandboxes/:id verifies its own).
    return sessionViews(deps.db, listed, sessionUsdPerHour, deps.clock());
  }

  async get(p: Principal, runId: string): Promise<SessionView> {
    const { deps } = this.core;
    const { run, session } = await sessionOf(deps.db, p, runId);
    const { sessionUsdPerHour } = await sessionPolicy(deps.db, p.tenantId);
    return sessionView(deps.db, session, run, sessionUsdPerHour, deps.clock());
  }

  /** POST /runs/:id/terminal-ticket: creator or admin; single use, 30 s, bound to the run and the caller. */
  async terminalTicket(p: Principal, runId: string): Promise<TicketView> {
    const { deps } = this.core;
    const { run } = await sessionOf(deps.db, p, runId, { state: 'open', at: deps.clock() });
    requireChannel(run, 'terminal');
    return mintTicket(deps.db, p.tenantId, runId, p.actor, deps.clock());
  }

  /**
   * Redeem a terminal ticket (any replica, exactly once): the open session's handle and who attaches. A ticket
   * minted before the session's expiry or idle deadline and offered after it is refused as `sessionOf` refuses
   * a session then (409 `session_ended`: the row is left to the reaper) — and, refused, it is not spent.
   */
  async redeemTerminal(runId: string, ticket: string) {
    const { deps } = this.core;
    const now = deps.clock();
    return withTx(deps.db, async (tx) => {
      const { tenant, actor } = await redeemTicket(tx, runId, ticket, now);
      const s = await openForTerminal(tx, tenant, runId, now);
      return { tenant, actor, handle: handleOf(s.handle), compute: computeOf(this.core, s.holder) };
    });
  }

  async #run(p: Principal, runId: string): Promise<RunView> {
    const row = await selectRunRows(this.core.deps.db)
      .selectAll()
      .where('tenant_id', '=', p.tenantId)
      .where('id', '=', runId)
      .executeTakeFirstOrThrow();
    return rowToView(row);
  }
}
