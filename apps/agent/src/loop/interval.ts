// One interval of a turn — the unit of work between two parks. Non-blocking by construction: a long tool
// call is dispatched and the interval ENDS — the report `awaiting_input` carries the interval's account
// (the call ids it dispatched) and the transcript's address and size; the control plane seals the
// `executed` segment and parks the turn as its transcript (`suspended`: the address + this process's
// manifest). Nothing stays resident. The next interval — in any process — re-reads the transcript,
// recomputes its address and reports `resumed` with it and its own manifest (runrecord, at the control
// plane, refuses another snapshot or manifest); the control plane prices the park's idle energy, the
// results that arrived are appended, and the interval's account resolves those calls. `mode: 'blocking'`
// awaits results inside the interval instead; it exists so the verifier can be shown to tell the two apart.
import { type TraceEvent, usageFromTrace } from '@everdict/run-model';
import type { Outcome } from '@everdict/runrecord';
import { type AgentSpec, priceCall } from '../agent-spec.js';
import type { ControlPlane, DeclineReason, LeaseRef, TurnLease, TurnReport } from '../control-plane.js';
import { AgentError, isAgentError } from '../errors.js';
import { hostCapabilities } from '../host/capabilities.js';
import type { IntervalSigner } from '../host/host-key.js';
import type { ModelProvider } from '../model/provider.js';
import { AGENT_METER, signInterval } from '../record/attest.js';
import { AGENT_PROTOCOL, manifestOf } from '../record/identity.js';
import { phaseOf } from '../record/turn-record.js';
import { uniqueCallIds } from '../tools/call-ids.js';
import { toolSpecs } from '../tools/catalog.js';
import { carryOut, resolutionEvents } from '../tools/dispatch.js';
import { messagesOf, outstandingCalls, storedAnswer } from '../transcript/messages.js';
import { Transcript } from '../transcript/transcript.js';

export interface IntervalOptions {
  readonly controlPlane: ControlPlane;
  readonly provider: (agent: AgentSpec) => ModelProvider;
  /** Who holds the lease (the holder name the lease was granted to). */
  readonly holder: string;
  readonly mode?: 'non_blocking' | 'blocking';
  /** The manifest protocol this process speaks (tests change it to show a ManifestMismatch). */
  readonly protocol?: string;
  readonly now?: () => number;
  readonly signal?: AbortSignal;
  readonly onText?: (runId: string, delta: string) => void;
  /**
   * A paired host's signer (host/host-key.ts): each interval this process ends is reported with its
   * attestation, signed here. Absent (an unpaired holder): the control plane seals it with its own key.
   */
  readonly signer?: IntervalSigner;
}

export { AGENT_METER };

export type IntervalOutcome =
  | {
      readonly result: 'parked';
      readonly runId: string;
      readonly outstanding: string[];
      readonly transcript: string;
    }
  | { readonly result: 'succeeded'; readonly runId: string; readonly summary: string }
  | { readonly result: 'failed'; readonly runId: string; readonly error: { code: string; message: string } }
  | {
      /** The park's resume was refused for this process (manifest/snapshot): declined, the lease released. */
      readonly result: 'declined';
      readonly runId: string;
      readonly reason: DeclineReason;
      /** `requeued`: left for other hosts; `failed`: none was left (`no_compatible_host`). */
      readonly outcome: 'requeued' | 'failed';
    };

const DECLINED_RECORD_CODES: Record<string, DeclineReason> = {
  ManifestMismatch: 'manifest_mismatch',
  SnapshotMismatch: 'snapshot_mismatch',
};

/** The decline reason of a refused `resumed` report, if the refusal is one another process might not meet. */
function declineReasonOf(e: unknown): DeclineReason | undefined {
  if (!isAgentError(e) || e.code !== 'record_refused') return undefined;
  const code = e.detail.recordCode;
  return typeof code === 'string' && Object.hasOwn(DECLINED_RECORD_CODES, code)
    ? DECLINED_RECORD_CODES[code]
    : undefined;
}

function reportUsage(events: readonly TraceEvent[]): NonNullable<TurnReport['usage']> {
  const u = usageFromTrace(events);
  return {
    inputTokens: u.inputTokens,
    outputTokens: u.outputTokens,
    costUsd: u.costUsd,
    llmCalls: u.llmCalls,
  };
}

export async function runInterval(lease: TurnLease, o: IntervalOptions): Promise<IntervalOutcome> {
  const now = o.now ?? Date.now;
  const agent = lease.agent;
  const ref: LeaseRef = { runId: lease.runId, tenant: lease.tenant, epoch: lease.epoch, holder: o.holder };
  const cp = o.controlPlane;
  const manifest = manifestOf(agent, o.protocol ?? AGENT_PROTOCOL);

  const phase = phaseOf({ unitId: lease.unitId, grantsId: lease.grantsId }, lease.record);
  if (phase === 'closed') throw new AgentError('state_conflict', `turn ${lease.runId} is closed`);
  const transcript = await Transcript.load(cp, lease.runId, () => new Date(now()));

  // 1. Un-park from the transcript alone: its address is recomputed from what is stored, never carried over.
  // The interval starts at the head the resume answers (a new turn's: the lease's).
  let head = lease.recordHead;
  // A disabled agent's turn (disabled since it was activated, e.g. while it was parked) is not run: it is
  // reported `failed` (`agent_disabled`) below, which releases the lease — not left to expire and be leased
  // again, for ever.
  // A park this process cannot resume — the record refuses its manifest, or the stored transcript is not the
  // parked snapshot — is declined with the reason: released at once and not offered to this holder again
  // while it declares the same capabilities (or failed `no_compatible_host` when no paired host is left),
  // not left to expire and be leased again.
  if (phase === 'parked' && agent.enabled) {
    const name = await transcript.name();
    try {
      head = (await cp.report(ref, { event: 'resumed', transcript: name.address, manifest })).recordHead;
    } catch (e) {
      const reason = declineReasonOf(e);
      if (!reason) throw e;
      const message = e instanceof Error ? e.message : String(e);
      // Under the capability set this process leases with (worker.ts): it is not offered the park again
      // while it declares that set — after a restart as another one (build, manifest basis) it is.
      const capabilities = hostCapabilities(o.protocol);
      const { outcome } = await cp.decline(ref, { reason, message, capabilities });
      return { result: 'declined', runId: lease.runId, reason, outcome };
    }
    await transcript.reload(); // the control plane's label of the park's idle energy
  }
  const startedMs = now();
  /** The interval's attestation, signed by this host (journal root: the stored transcript's address). */
  const attest = async (outcome: Outcome, journalRoot?: string): Promise<Partial<TurnReport>> => {
    if (!o.signer) return {};
    let root = journalRoot;
    if (root === undefined) {
      await transcript.reload();
      root = (await transcript.name()).address;
    }
    const attestation = signInterval(o.signer, {
      unitId: lease.unitId,
      grantsId: lease.grantsId,
      recordHead: head,
      startedMs,
      endedMs: now(),
      journalRoot: root,
      outcome,
    });
    return { attestation };
  };

  const dispatched: string[] = [];
  const resolved: string[] = [];
  let summary: string | undefined;
  let failure: { code: string; message: string } | undefined;

  try {
    if (!agent.enabled) throw new AgentError('agent_disabled', `agent ${agent.id} is disabled`);
    // 2. The opening message, then results that arrived for outstanding calls.
    if (transcript.length === 0 && lease.input)
      await transcript.append(ref, [{ type: 'message', role: 'user', content: lease.input.text }]);
    const open = new Set(outstandingCalls(transcript.events).map((c) => c.callId));
    for (const r of lease.resolutions) {
      if (!open.has(r.callId)) continue;
      await transcript.append(ref, resolutionEvents(r));
      open.delete(r.callId);
      resolved.push(r.callId);
    }

    // 3. The loop: model → tool calls → (dispatch | answer) until the model answers or a call is outstanding.
    // An answer already stored (its `succeeded` report was lost, the lease expired): settle with it.
    summary = storedAnswer(transcript.events);
    const provider = o.provider(agent);
    const tools = toolSpecs(agent.tools);
    for (let step = 0; summary === undefined; step++) {
      if (outstandingCalls(transcript.events).length > 0) break;
      if (step >= agent.maxStepsPerInterval) {
        failure = { code: 'max_steps', message: `no answer after ${step} model calls in one interval` };
        break;
      }
      if (o.signal?.aborted) throw new AgentError('stale_lease', `the lease on ${lease.runId} was lost`);
      const t0 = now();
      const completion = await provider.complete({
        model: agent.model,
        messages: messagesOf(agent.systemPrompt, transcript.events),
        tools,
        ...(o.signal ? { signal: o.signal } : {}),
        ...(o.onText ? { onText: (d: string) => o.onText?.(lease.runId, d) } : {}),
      });
      const usage = completion.usage;
      if (!usage)
        throw new AgentError(
          'model_failed',
          'the provider reported no usage: a spent call cannot be counted as zero',
        );
      const costUsd = priceCall(agent.pricing, usage);
      // Ids the provider left empty or repeated are made unique before anything is stored or dispatched.
      const toolCalls = uniqueCallIds(completion.toolCalls, transcript.events);
      await transcript.append(ref, [
        {
          type: 'llm_call',
          model: completion.model,
          inputTokens: usage.inputTokens,
          outputTokens: usage.outputTokens,
          ...(usage.cacheReadTokens ? { cacheReadTokens: usage.cacheReadTokens } : {}),
          ...(costUsd !== undefined ? { costUsd } : {}),
          latencyMs: Math.max(0, now() - t0),
        },
        { type: 'message', role: 'assistant', content: completion.content },
        ...toolCalls.map((c) => {
          let input: unknown;
          try {
            input = JSON.parse(c.argumentsJson);
          } catch {
            input = { unparsed: c.argumentsJson };
          }
          return { type: 'tool_call' as const, callId: c.callId, tool: c.tool, input: input as never };
        }),
      ]);
      if (toolCalls.length === 0) {
        summary = completion.content;
        break;
      }
      for (const call of toolCalls) {
        const out = await carryOut(cp, ref, agent.tools, call);
        await transcript.append(ref, out.events);
        if (out.kind !== 'dispatched') continue;
        dispatched.push(call.callId);
        if (o.mode === 'blocking') {
          const r = await cp.awaitResolution(ref, call.callId, o.signal);
          await transcript.append(ref, resolutionEvents(r));
          resolved.push(call.callId);
        }
      }
    }
  } catch (e) {
    if (isAgentError(e) && (e.code === 'stale_lease' || e.code === 'control_plane_unavailable')) throw e;
    failure = isAgentError(e)
      ? { code: e.code, message: e.message }
      : { code: 'agent_failed', message: String(e) };
  }

  // 4. End the interval: its account, then park, settle or fail (the control plane writes the segments).
  const outstanding = outstandingCalls(transcript.events).map((c) => c.callId);
  const account = { dispatched, resolved };
  const usage = reportUsage(transcript.events);
  if (!failure && summary === undefined) {
    await transcript.reload(); // the address of what is STORED is what any resuming process will compute
    const name = await transcript.name();
    await cp.report(ref, {
      event: 'awaiting_input',
      transcript: name.address,
      transcriptBytes: name.bytes,
      manifest,
      account,
      usage,
      ...(await attest('yielded', name.address)),
    });
    return { result: 'parked', runId: lease.runId, outstanding, transcript: name.address };
  }
  if (!failure) {
    await cp.report(ref, {
      event: 'succeeded',
      account,
      outputs: { summary: summary ?? '' },
      usage,
      ...(await attest('succeeded')),
    });
    return { result: 'succeeded', runId: lease.runId, summary: summary ?? '' };
  }
  await cp.report(ref, { event: 'failed', account, usage, error: failure, ...(await attest('failed')) });
  return { result: 'failed', runId: lease.runId, error: failure };
}
