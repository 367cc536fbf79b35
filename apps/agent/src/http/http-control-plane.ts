// The ControlPlane port over HTTP: the control plane's agent routes through @everdict/client (typed by the
// live OpenAPI document), authenticated by the service token. Refusals become AgentErrors by their problem
// code (refusals.ts).
import { createClient, dataOf, type EverdictClient } from '@everdict/client';
import type { JsonValue, TraceEvent } from '@everdict/run-model';
import { anySignal } from 'any-signal';
import { z } from 'zod';
import {
  type CommandRunSpec,
  type ControlPlane,
  type DeclineReason,
  type ExperimentSpec,
  type LeaseRef,
  Resolution,
  type RunView,
  type TranscriptPage,
  type TurnDeclined,
  TurnLease,
  type TurnReport,
} from '../control-plane.js';
import { AgentError, parseOrThrow } from '../errors.js';
import { hostCapabilities } from '../host/capabilities.js';
import type { IntervalSigner } from '../host/host-key.js';
import { signInterval } from '../record/attest.js';
import { Transcript } from '../transcript/transcript.js';
import { call } from './refusals.js';

export interface HttpControlPlaneOptions {
  /** The control plane's base URL, e.g. http://127.0.0.1:8787. */
  readonly url: string;
  /** EVERDICT_INTERNAL_TOKEN: the agent service is a service, not a tenant's member. */
  readonly token: string;
  readonly fetch?: typeof globalThis.fetch;
  /** How often a blocking interval looks for a result (default 100 ms). */
  readonly pollMs?: number;
  /**
   * How long a call may go unanswered (default 30 s; a lease poll: its wait and this). Past it the call fails
   * as one that got no answer (`control_plane_unavailable`) and its request is cut, so a hung control plane
   * ends the interval — whose lease then expires — instead of holding the turn under a live heartbeat.
   */
  readonly requestTimeoutMs?: number;
  /**
   * A granted lease that does not parse (it is skipped; the others of the batch are worked): what happened
   * to it. Default: one JSON line on stderr.
   */
  readonly onBadLease?: (e: BadLease) => void;
}

/** A lease in a batch that did not parse: its turn (if readable) and whether it was reported `failed`. */
export interface BadLease {
  readonly runId?: string | undefined;
  readonly error: AgentError;
  /** Reported `failed` (`bad_lease`), which released the lease; else it expires. */
  readonly failed: boolean;
  /** Why the `failed` report was refused, when it was. */
  readonly reportError?: unknown;
}

/** Enough of a lease to name its turn and report on it. */
const LeaseIdentity = z.object({
  runId: z.string().min(1),
  tenant: z.string().min(1),
  epoch: z.int().positive(),
});

/** Enough more of it for a paired host to sign the interval its `failed` report ends. */
const hex64 = z.string().regex(/^[0-9a-f]{64}$/);
const SignedIdentity = z.object({ unitId: hex64, grantsId: hex64, recordHead: hex64 });

const logBadLease = (e: BadLease): void => {
  process.stderr.write(
    `${JSON.stringify({
      warn: 'lease skipped: it does not parse',
      runId: e.runId,
      message: e.error.message,
      failed: e.failed,
      ...(e.reportError !== undefined ? { reportError: String(e.reportError) } : {}),
    })}\n`,
  );
};

/** How long a call to the control plane may go unanswered, by default. */
export const REQUEST_TIMEOUT_MS = 30_000;

const held = (l: LeaseRef) => ({ holder: l.holder, epoch: l.epoch });

export class HttpControlPlane implements ControlPlane {
  readonly client: EverdictClient;
  readonly #pollMs: number;
  readonly #timeoutMs: number;
  readonly #onBadLease: (e: BadLease) => void;

  constructor(o: HttpControlPlaneOptions) {
    this.#onBadLease = o.onBadLease ?? logBadLease;
    this.client = createClient({ baseUrl: o.url, token: o.token, ...(o.fetch ? { fetch: o.fetch } : {}) });
    this.#pollMs = o.pollMs ?? 100;
    this.#timeoutMs = o.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  }

  /** The signal of one call: aborted past the request timeout (plus `waitMs`). */
  #bounded(waitMs = 0): { signal: AbortSignal } {
    return { signal: AbortSignal.timeout(this.#timeoutMs + waitMs) };
  }

  /**
   * `send` under `#bounded`'s signal, aborted also when `outer` (the serve loop's, a lease's) aborts. The two
   * are joined for this call only: `AbortSignal.any` would keep every call's signal for as long as `outer`
   * lives (Node 20: nodejs/node#55351; README, "Long-lived signals").
   */
  async #within<T>(
    waitMs: number,
    outer: AbortSignal | undefined,
    send: (init: { signal: AbortSignal }) => Promise<T>,
  ): Promise<T> {
    const signal = anySignal([this.#bounded(waitMs).signal, outer]);
    try {
      return await send({ signal });
    } finally {
      signal.clear();
    }
  }

  async lease(request: {
    free: number;
    holder: string;
    waitMs?: number;
    signal?: AbortSignal;
    signer?: IntervalSigner | undefined;
    capabilities?: readonly string[];
  }): Promise<TurnLease[]> {
    const body = {
      holder: request.holder,
      free: request.free,
      waitMs: request.waitMs ?? 0,
      capabilities: [...(request.capabilities ?? hostCapabilities())],
    };
    const out = await call(() =>
      this.#within(body.waitMs, request.signal, async (bound) =>
        dataOf(await this.client.POST('/internal/agent/v1/leases', { body, ...bound })),
      ),
    );
    const leases: TurnLease[] = [];
    for (const raw of out.leases as unknown[]) {
      const r = TurnLease.safeParse(raw);
      if (r.success) leases.push(r.data);
      else await this.#refuseLease(raw, request.holder, request.signer, r.error.message);
    }
    return leases;
  }

  /**
   * A granted lease this agent cannot read is not worked, and not left to sit until it expires (to be granted
   * again, and refused again): when it names its turn, the turn is reported `failed` (`bad_lease`) under that
   * lease, which releases it — by a paired host (`signer`) with the attestation it signs of that (empty)
   * interval, which the control plane requires of a paired host's report. Logged either way; a report that
   * cannot be made or is refused leaves the lease to expire.
   */
  async #refuseLease(
    raw: unknown,
    holder: string,
    signer: IntervalSigner | undefined,
    why: string,
  ): Promise<void> {
    const ref = LeaseIdentity.safeParse(raw);
    const runId = ref.success ? ref.data.runId : undefined;
    const error = new AgentError('bad_request', `lease: ${why}`);
    if (!ref.success) {
      this.#onBadLease({ error, failed: false });
      return;
    }
    const startedMs = Date.now();
    try {
      let attestation: Record<string, unknown> | undefined;
      if (signer) {
        const facts = SignedIdentity.safeParse(raw);
        if (!facts.success)
          throw new AgentError(
            'bad_request',
            'the lease names no readable unit, grant set and record head: this host cannot sign its failure',
          );
        const stored = await Transcript.load(this, ref.data.runId);
        attestation = signInterval(signer, {
          ...facts.data,
          startedMs,
          endedMs: Date.now(),
          journalRoot: (await stored.name()).address,
          outcome: 'failed',
        });
      }
      await this.report(
        { ...ref.data, holder },
        {
          event: 'failed',
          account: { dispatched: [], resolved: [] },
          error: {
            code: 'bad_lease',
            message: `the agent service could not read the lease: ${why}`.slice(0, 2000),
          },
          ...(attestation ? { attestation } : {}),
        },
      );
      this.#onBadLease({ runId, error, failed: true });
    } catch (e) {
      this.#onBadLease({ runId, error, failed: false, reportError: e });
    }
  }

  async heartbeat(holder: string, leases: readonly { runId: string; epoch: number }[]) {
    return call(async () =>
      dataOf(
        await this.client.POST('/internal/agent/v1/heartbeat', {
          body: { holder, leases: [...leases] },
          ...this.#bounded(),
        }),
      ),
    );
  }

  async report(lease: LeaseRef, r: TurnReport): Promise<{ recordHead: string }> {
    const run = await call(async () =>
      dataOf(
        await this.client.POST('/internal/agent-run-events', {
          params: { header: { 'x-everdict-tenant': lease.tenant } },
          ...this.#bounded(),
          body: {
            runId: lease.runId,
            ...held(lease),
            event: r.event,
            ...(r.transcript ? { transcript: r.transcript } : {}),
            ...(r.transcriptBytes !== undefined ? { transcriptBytes: r.transcriptBytes } : {}),
            ...(r.manifest ? { manifest: r.manifest } : {}),
            ...(r.account
              ? { account: { dispatched: [...r.account.dispatched], resolved: [...r.account.resolved] } }
              : {}),
            // (the generated type of a strict object is not assignable from an optional field; the shape is checked server-side)
            ...(r.outputs ? { outputs: r.outputs as never } : {}),
            ...(r.usage ? { usage: r.usage } : {}),
            ...(r.error ? { error: r.error } : {}),
            ...(r.attestation ? { attestation: r.attestation } : {}),
          },
        }),
      ),
    );
    return { recordHead: run.record.head };
  }

  async decline(
    lease: LeaseRef,
    why: { reason: DeclineReason; message?: string; capabilities?: readonly string[] },
  ): Promise<TurnDeclined> {
    const out = await call(async () =>
      dataOf(
        await this.client.POST('/internal/agent/v1/runs/{id}/decline', {
          params: { path: { id: lease.runId } },
          body: {
            ...held(lease),
            reason: why.reason,
            ...(why.message ? { message: why.message.slice(0, 2000) } : {}),
            capabilities: [...(why.capabilities ?? hostCapabilities())],
          },
          ...this.#bounded(),
        }),
      ),
    );
    return { outcome: out.outcome, declinedBy: out.declinedBy };
  }

  async readTranscript(runId: string, page: { offset: number; limit: number }): Promise<TranscriptPage> {
    const out = await call(async () =>
      dataOf(
        await this.client.GET('/internal/agent/v1/runs/{id}/transcript', {
          params: { path: { id: runId }, query: page },
          ...this.#bounded(),
        }),
      ),
    );
    return { events: out.events as TraceEvent[], nextOffset: out.nextOffset, eventCount: out.eventCount };
  }

  async appendTranscript(lease: LeaseRef, events: readonly TraceEvent[]): Promise<void> {
    await call(async () =>
      this.client.POST('/internal/agent/v1/runs/{id}/transcript', {
        params: { path: { id: lease.runId } },
        body: { ...held(lease), events: [...events] },
        ...this.#bounded(),
      }),
    );
  }

  async #dispatch(
    lease: LeaseRef,
    body: Record<string, unknown>,
  ): Promise<{ runId: string | null; groupId?: string | undefined; runIds?: string[] | undefined }> {
    return call(async () =>
      dataOf(
        await this.client.POST('/internal/agent/v1/runs/{id}/calls', {
          params: { path: { id: lease.runId } },
          body: { ...held(lease), ...body } as never,
          ...this.#bounded(),
        }),
      ),
    );
  }

  async startCommandRun(lease: LeaseRef, callId: string, spec: CommandRunSpec): Promise<{ runId: string }> {
    const input = { command: [...spec.command], ...(spec.image ? { image: spec.image } : {}) };
    const out = await this.#dispatch(lease, { callId, tool: 'run_command', input });
    return { runId: out.runId ?? '' };
  }

  async startExperiment(
    lease: LeaseRef,
    callId: string,
    spec: ExperimentSpec,
  ): Promise<{ groupId: string; runIds: string[] }> {
    const input = {
      harness: spec.harness,
      ...(spec.dataset ? { dataset: spec.dataset } : {}),
      ...(spec.repeat !== undefined ? { repeat: spec.repeat } : {}),
      ...(spec.cases ? { cases: [...spec.cases] } : {}),
    };
    const out = await this.#dispatch(lease, { callId, tool: 'start_experiment', input });
    return { groupId: out.groupId ?? '', runIds: out.runIds ?? [] };
  }

  async requestApproval(lease: LeaseRef, callId: string, question: string): Promise<void> {
    await this.#dispatch(lease, { callId, tool: 'ask_approval', input: { question } });
  }

  async readRun(
    lease: LeaseRef,
    runId: string,
    view: RunView,
    page: { offset: number; limit: number },
  ): Promise<JsonValue> {
    const out = await call(async () =>
      dataOf(
        await this.client.POST('/internal/agent/v1/runs/{id}/read', {
          params: { path: { id: lease.runId } },
          body: { ...held(lease), runId, what: view, ...page },
          ...this.#bounded(),
        }),
      ),
    );
    return out as JsonValue;
  }

  async awaitResolution(lease: LeaseRef, callId: string, signal?: AbortSignal): Promise<Resolution> {
    for (;;) {
      const out = await call(() =>
        this.#within(0, signal, async (bound) =>
          dataOf(
            await this.client.POST('/internal/agent/v1/runs/{id}/resolutions', {
              params: { path: { id: lease.runId } },
              body: held(lease),
              ...bound,
            }),
          ),
        ),
      );
      const hit = out.resolutions.find((r) => r.callId === callId);
      if (hit) return parseOrThrow(Resolution, hit, 'resolution');
      if (signal?.aborted) throw new AgentError('stale_lease', 'the lease was lost while waiting');
      await new Promise((r) => setTimeout(r, this.#pollMs));
    }
  }
}
