// The local seat of the ControlPlane port: a directory ledger (agents, turns, caused runs) with the real
// admission gate of @everdict/admission in front of every activation and caused run, so an envelope's 402
// is the gate's answer, not an imitation of it. It also plays the control plane's side of the routes the
// agent needs (POST /agents, a conversation message, POST /runs/:id/input, settling a caused run, cancel),
// which is what the demo and the tests drive. Leases follow the runner protocol's rules: a grant bumps
// the epoch, heartbeats extend it, an expired lease requeues, a stale epoch is `stale_lease`.
import { randomUUID } from 'node:crypto';
import {
  type AdmissionStore,
  admit,
  cancelTree,
  configureTenant,
  MemoryAdmissionStore,
  release,
  type TenantPolicyInput,
} from '@everdict/admission';
import type { JsonValue, TraceEvent } from '@everdict/run-model';
import { decodeWire, verifyWire } from '@everdict/runrecord';
import type { TrajectoryStore } from '@everdict/trajectory-store';
import { AgentSpec, type AgentSpecInput } from '../agent-spec.js';
import type {
  CommandRunSpec,
  ControlPlane,
  ExperimentSpec,
  LeaseRef,
  Resolution,
  RunView,
  TurnLease,
  TurnReport,
} from '../control-plane.js';
import { AgentError } from '../errors.js';
import { grantsIdOf, unitIdOf } from '../record/identity.js';
import { TurnRecord } from '../record/turn-record.js';
import { grantLeases, heldTurn, readyIfResolved, renewLeases } from './leases.js';
import { type Ledger, LedgerFile, type TurnRow } from './ledger-file.js';

export interface LocalControlPlaneOptions {
  readonly dir: string;
  /** Trajectories of turns and caused runs (read_run reads them here). */
  readonly store: TrajectoryStore;
  /** The gate's state. In-memory by default: admissions are this process's (see README). */
  readonly admission?: AdmissionStore;
  readonly now?: () => number;
  readonly leaseMs?: number;
  readonly heartbeatMs?: number;
  /** How often awaitResolution re-reads the ledger. */
  readonly pollMs?: number;
}

const isActive = (s: TurnRow['status']) => s === 'queued' || s === 'running' || s === 'awaiting_input';

function refusal(status: number, detail: string, rule: string): AgentError {
  if (status === 402) return new AgentError('envelope_exhausted', detail, { rule });
  if (status === 429) return new AgentError('capacity_refused', detail, { rule });
  return new AgentError(rule === 'agent_disabled' ? 'agent_disabled' : 'state_conflict', detail, { rule });
}

export class LocalControlPlane implements ControlPlane {
  readonly ledger: LedgerFile;
  readonly admission: AdmissionStore;
  readonly #store: TrajectoryStore;
  readonly #now: () => number;
  readonly #leaseMs: number;
  readonly #heartbeatMs: number;
  readonly #pollMs: number;

  constructor(o: LocalControlPlaneOptions) {
    this.ledger = new LedgerFile(o.dir);
    this.admission = o.admission ?? new MemoryAdmissionStore();
    this.#store = o.store;
    this.#now = o.now ?? Date.now;
    this.#leaseMs = o.leaseMs ?? 10_000;
    this.#heartbeatMs = o.heartbeatMs ?? 2_000;
    this.#pollMs = o.pollMs ?? 20;
  }

  // ---- the control plane's side (what POST /agents, conversations, /runs/:id/input will do) ----

  async configureTenant(tenant: string, policy: TenantPolicyInput = {}): Promise<void> {
    await configureTenant(this.admission, tenant, policy);
  }

  /** POST /agents (and PATCH: the same id with another version replaces it). */
  async putAgent(tenant: string, input: AgentSpecInput): Promise<AgentSpec> {
    const parsed = AgentSpec.safeParse(input);
    if (!parsed.success) throw new AgentError('bad_request', `agent: ${parsed.error.message}`);
    const spec = parsed.data;
    this.ledger.update((l) => {
      l.agents[spec.id] = { tenant, spec };
    });
    await this.admission.setAgentEnabled(tenant, spec.id, spec.enabled);
    return spec;
  }

  /** A turn: POST /conversations/:id/messages (member-caused) or an event activation (event-caused). */
  async startTurn(input: {
    tenant: string;
    agentId: string;
    text: string;
    cause?: 'member' | 'event';
  }): Promise<{ runId: string }> {
    const entry = this.ledger.read().agents[input.agentId];
    if (!entry || entry.tenant !== input.tenant)
      throw new AgentError('not_found', `agent ${input.agentId} not found`);
    const agent = entry.spec;
    const runId = `turn_${randomUUID()}`;
    const decision = await admit(
      this.admission,
      {
        requestId: runId,
        runId,
        tenant: input.tenant,
        kind: 'agent',
        cause: input.cause ?? 'member',
        ...(input.cause === 'event' ? {} : { class: 'interactive' as const }),
        agentId: agent.id,
        envelope: {
          id: `slice:${runId}`,
          caps: {
            ...(agent.envelope.usd !== undefined ? { usd: agent.envelope.usd } : {}),
            ...(agent.envelope.tokens !== undefined ? { tokens: agent.envelope.tokens } : {}),
            // The gate counts the activation itself against the slice it opens: `runs` is what the turn
            // may CAUSE, so the slice holds one more (the turn).
            ...(agent.envelope.runs !== undefined ? { runs: agent.envelope.runs + 1 } : {}),
          },
          ...(agent.envelope.inFlight !== undefined ? { inFlightCap: agent.envelope.inFlight } : {}),
        },
      },
      this.#now(),
    );
    if (decision.outcome === 'refused') throw refusal(decision.status, decision.detail, decision.rule);
    this.ledger.update((l) => {
      l.turns[runId] = {
        runId,
        tenant: input.tenant,
        agentId: agent.id,
        status: 'queued',
        epoch: 0,
        unitId: unitIdOf(input.tenant, runId, agent),
        grantsId: grantsIdOf(agent),
        record: null,
        input: { text: input.text },
        calls: {},
        outstanding: [],
        resolutions: [],
      };
    });
    return { runId };
  }

  /** POST /runs/:id/input: resolve a pending approval; the parked turn becomes ready to resume. */
  resolveInput(
    runId: string,
    input: { callId: string; approved: boolean; note?: string; by?: string },
  ): TurnRow {
    return this.ledger.update((l) => {
      const turn = l.turns[runId];
      if (!turn) throw new AgentError('not_found', `run ${runId} not found`);
      const call = turn.calls[input.callId];
      if (call?.tool !== 'ask_approval')
        throw new AgentError('not_found', `run ${runId} has no approval call ${input.callId}`);
      if (!isActive(turn.status)) throw new AgentError('state_conflict', `run ${runId} is ${turn.status}`);
      if (!turn.outstanding.includes(input.callId) || turn.resolutions.some((r) => r.callId === input.callId))
        throw new AgentError('state_conflict', `call ${input.callId} is already resolved`);
      turn.resolutions.push({
        kind: 'approval',
        callId: input.callId,
        approved: input.approved,
        ...(input.note !== undefined ? { note: input.note } : {}),
        ...(input.by !== undefined ? { by: input.by } : {}),
      });
      readyIfResolved(turn);
      return structuredClone(turn);
    });
  }

  /** A caused run settled (what a runner's complete does): its envelope is released, its causer hears. */
  async settleRun(
    runId: string,
    result: { status: 'succeeded' | 'failed' | 'cancelled'; outputs?: JsonValue; usd?: number },
  ): Promise<void> {
    const row = this.ledger.read().runs[runId];
    if (!row) throw new AgentError('not_found', `run ${runId} not found`);
    if (row.status !== 'queued') throw new AgentError('state_conflict', `run ${runId} is ${row.status}`);
    await release(
      this.admission,
      { tenant: row.tenant, runId, status: result.status, actuals: { usd: result.usd ?? 0 } },
      this.#now(),
    );
    this.ledger.update((l) => {
      const r = l.runs[runId]!;
      r.status = result.status;
      if (result.outputs !== undefined) r.outputs = result.outputs;
      const turn = l.turns[r.causedBy];
      if (!turn || !isActive(turn.status) || !turn.outstanding.includes(r.callId)) return;
      turn.resolutions.push({
        kind: 'run',
        callId: r.callId,
        runId,
        status: result.status,
        ...(result.outputs !== undefined ? { outputs: result.outputs } : {}),
      });
      readyIfResolved(turn);
    });
  }

  /** POST /runs/:id/cancel: the turn and its non-terminal descendants; a parked record is closed. */
  async cancelTurn(runId: string): Promise<{ cancelled: string[] }> {
    const turn = this.ledger.read().turns[runId];
    if (!turn) throw new AgentError('not_found', `run ${runId} not found`);
    if (!isActive(turn.status)) throw new AgentError('state_conflict', `run ${runId} is ${turn.status}`);
    const tree = await cancelTree(this.admission, turn.tenant, runId, this.#now());
    return this.ledger.update((l) => {
      const t = l.turns[runId]!;
      const cancelled: string[] = [runId];
      for (const id of [...tree.cancelled, ...tree.toStop]) {
        const r = l.runs[id];
        if (r && r.status === 'queued') {
          r.status = 'cancelled';
          cancelled.push(id);
        }
      }
      if (t.record !== null) {
        const rec = TurnRecord.from({ unitId: t.unitId, grantsId: t.grantsId }, t.record);
        if (rec.phase !== 'closed') rec.close('cancelled');
        t.record = rec.toWire();
      }
      t.status = 'cancelled';
      delete t.holder;
      return { cancelled };
    });
  }

  turn(runId: string): TurnRow | undefined {
    return this.ledger.read().turns[runId];
  }

  causedRuns(turnId: string): Ledger['runs'][string][] {
    return Object.values(this.ledger.read().runs).filter((r) => r.causedBy === turnId);
  }

  // ---- the port ----

  async lease(request: { free: number; holder: string }): Promise<TurnLease[]> {
    const terms = { now: this.#now(), leaseMs: this.#leaseMs, heartbeatMs: this.#heartbeatMs };
    return this.ledger.update((l) => grantLeases(l, request, terms));
  }

  async heartbeat(holder: string, leases: readonly LeaseRef[]): Promise<{ lost: string[] }> {
    const now = this.#now();
    return this.ledger.update((l) => renewLeases(l, holder, leases, now + this.#leaseMs));
  }

  async report(ref: LeaseRef, report: TurnReport): Promise<void> {
    const now = this.#now();
    this.ledger.update((l) => {
      const t = heldTurn(l, ref);
      const verdict = verifyWire(report.record);
      if (!verdict.ok)
        throw new AgentError('record_refused', `the reported record does not verify: ${verdict.error}`);
      const next = decodeWire(report.record);
      if (next.unitId !== t.unitId || next.grantsId !== t.grantsId)
        throw new AgentError('identity_mismatch', 'the reported record names another unit or grant set');
      if (t.record !== null) {
        const prev = decodeWire(t.record);
        const extends_ = prev.segments.every((s, i) => next.segments[i]?.head === s.head);
        if (!extends_ || next.segments.length <= prev.segments.length)
          throw new AgentError('record_refused', 'the reported record does not extend the one held');
      }
      t.record = report.record;
      t.usage = report.usage;
      delete t.holder;
      delete t.leaseExpiresAt;
      if (report.event === 'awaiting_input') {
        const outstanding = [...(report.outstanding ?? [])];
        t.outstanding = outstanding;
        t.resolutions = t.resolutions.filter((r) => outstanding.includes(r.callId));
        t.status = 'awaiting_input';
        t.parkedAtMs = now;
        readyIfResolved(t);
      } else {
        t.status = report.event;
        t.outstanding = [];
        t.resolutions = [];
        if (report.outputs) t.outputs = report.outputs;
        if (report.error) t.error = report.error;
      }
    });
    if (report.event !== 'awaiting_input') {
      const turn = this.ledger.read().turns[ref.runId]!;
      await release(
        this.admission,
        {
          tenant: turn.tenant,
          runId: ref.runId,
          status: report.event,
          actuals: {
            usd: report.usage.costUsd,
            tokens: report.usage.inputTokens + report.usage.outputTokens,
          },
        },
        now,
      ).catch(() => undefined);
    }
  }

  async startCommandRun(ref: LeaseRef, callId: string, spec: CommandRunSpec): Promise<{ runId: string }> {
    return this.#caused(ref, callId, 'command', {
      command: [...spec.command],
      ...(spec.image ? { image: spec.image } : {}),
    });
  }

  async startExperiment(_ref: LeaseRef, _callId: string, spec: ExperimentSpec): Promise<{ runId: string }> {
    throw new AgentError(
      'tool_unavailable',
      `eval experiments need the control plane's harness registry and eval lane; the local control plane has neither (harness ${spec.harness} not started)`,
    );
  }

  async readRun(
    ref: LeaseRef,
    runId: string,
    view: RunView,
    page: { offset: number; limit: number },
  ): Promise<JsonValue | { events: TraceEvent[]; nextOffset: number }> {
    const l = this.ledger.read();
    const turn = heldTurn(l, ref);
    const run = l.runs[runId];
    const other = l.turns[runId];
    const tenant = run?.tenant ?? other?.tenant;
    if (tenant !== turn.tenant) throw new AgentError('not_found', `run ${runId} not found`);
    if (view === 'outputs') {
      if (run) return { runId, kind: run.kind, status: run.status, outputs: run.outputs ?? null };
      return { runId, kind: 'agent', status: other!.status, outputs: other!.outputs ?? null };
    }
    const head = await this.#store.head(tenant, runId).catch(() => null);
    if (!head || head.eventCount === 0) return { events: [], nextOffset: page.offset };
    const p = await this.#store.read(tenant, runId, page);
    return { events: p.items, nextOffset: p.nextOffset };
  }

  async requestApproval(ref: LeaseRef, callId: string, _question: string): Promise<void> {
    this.ledger.update((l) => {
      const t = heldTurn(l, ref);
      t.calls[callId] = { tool: 'ask_approval' };
      t.outstanding = [...new Set([...t.outstanding, callId])];
    });
  }

  async awaitResolution(ref: LeaseRef, callId: string, signal?: AbortSignal): Promise<Resolution> {
    for (;;) {
      const t = heldTurn(this.ledger.read(), ref);
      const r = t.resolutions.find((x) => x.callId === callId);
      if (r) return r;
      if (signal?.aborted) throw new AgentError('stale_lease', 'the lease was lost while waiting');
      await new Promise((resolve) => setTimeout(resolve, this.#pollMs));
    }
  }

  // ---- internals ----

  async #caused(
    ref: LeaseRef,
    callId: string,
    kind: 'command' | 'eval',
    spec: JsonValue,
  ): Promise<{ runId: string }> {
    const turn = heldTurn(this.ledger.read(), ref);
    const runId = `run_${randomUUID()}`;
    const decision = await admit(
      this.admission,
      {
        requestId: `${ref.runId}:${callId}`,
        runId,
        tenant: turn.tenant,
        kind,
        cause: 'run',
        causedByRunId: ref.runId,
      },
      this.#now(),
    ).catch((e: unknown) => {
      const code = (e as { code?: string }).code;
      if (code === 'unknown_run' || code === 'unknown_tenant')
        throw new AgentError(
          'not_found',
          `the gate does not know turn ${ref.runId} (admitted by another process?)`,
        );
      throw e;
    });
    if (decision.outcome === 'refused') throw refusal(decision.status, decision.detail, decision.rule);
    const admittedId = decision.runId;
    this.ledger.update((l) => {
      const t = heldTurn(l, ref);
      l.runs[admittedId] = {
        runId: admittedId,
        tenant: t.tenant,
        kind,
        causedBy: ref.runId,
        callId,
        spec,
        status: 'queued',
      };
      t.calls[callId] = {
        tool: kind === 'command' ? 'run_command' : 'start_experiment',
        causedRunId: admittedId,
      };
      t.outstanding = [...new Set([...t.outstanding, callId])];
    });
    return { runId: admittedId };
  }
}
