// One interval of a turn — the unit of work between two parks. Non-blocking by construction: a long tool
// call is dispatched and the interval ENDS (executed segment whose account lists the dispatched ids), the
// turn parks as its transcript (suspended segment: transcript address + manifest) and nothing stays
// resident. The next interval — in any process — reopens the record, recomputes the transcript's address
// from the store and resumes (runrecord checks both), records the park's idle energy, appends the results
// that arrived, and its account resolves those calls. `mode: 'blocking'` awaits results inside the interval
// instead; it exists so that the verifier can be shown to tell the two apart.
import { type TraceEvent, usageFromTrace } from '@everdict/run-model';
import type { TrajectoryStore } from '@everdict/trajectory-store';
import { type AgentSpec, priceCall } from '../agent-spec.js';
import type { ControlPlane, LeaseRef, TurnLease, TurnReport } from '../control-plane.js';
import { AgentError, isAgentError } from '../errors.js';
import type { ModelProvider } from '../model/provider.js';
import { DEFAULT_AGENT_WATTS, DEFAULT_STORAGE_W_PER_GB, PARK_METER, parkEnergy } from '../record/energy.js';
import { AGENT_PROTOCOL, manifestOf } from '../record/identity.js';
import { TurnRecord } from '../record/turn-record.js';
import { toolSpecs } from '../tools/catalog.js';
import { carryOut, resolutionEvents } from '../tools/dispatch.js';
import { messagesOf, outstandingCalls } from '../transcript/messages.js';
import { nameEvents, Transcript } from '../transcript/transcript.js';

export interface IntervalOptions {
  readonly controlPlane: ControlPlane;
  readonly store: TrajectoryStore;
  readonly provider: (agent: AgentSpec) => ModelProvider;
  readonly mode?: 'non_blocking' | 'blocking';
  /** EVERDICT_STORAGE_W_PER_GB (default DEFAULT_STORAGE_W_PER_GB). */
  readonly storageWattsPerGb?: number;
  /** EVERDICT_AGENT_WATTS (default DEFAULT_AGENT_WATTS). */
  readonly agentWatts?: number;
  /** The manifest protocol this process speaks (tests change it to show a ManifestMismatch). */
  readonly protocol?: string;
  readonly now?: () => number;
  readonly signal?: AbortSignal;
  readonly onText?: (runId: string, delta: string) => void;
}

export type IntervalOutcome =
  | {
      readonly result: 'parked';
      readonly runId: string;
      readonly outstanding: string[];
      readonly transcript: string;
    }
  | { readonly result: 'succeeded'; readonly runId: string; readonly summary: string }
  | { readonly result: 'failed'; readonly runId: string; readonly error: { code: string; message: string } };

function reportUsage(events: readonly TraceEvent[]): TurnReport['usage'] {
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
  const startedMs = now();
  const agent = lease.agent;
  const ref: LeaseRef = { runId: lease.runId, epoch: lease.epoch };
  const cp = o.controlPlane;
  const manifest = manifestOf(agent, o.protocol ?? AGENT_PROTOCOL);

  if (!agent.enabled) throw new AgentError('agent_disabled', `agent ${agent.id} is disabled`);
  const record = TurnRecord.from({ unitId: lease.unitId, grantsId: lease.grantsId }, lease.record);
  if (record.phase === 'closed') throw new AgentError('state_conflict', `turn ${lease.runId} is closed`);
  const transcript = await Transcript.load(o.store, lease.tenant, lease.runId, () => new Date(now()));
  /** This interval's journal: every event it appends, from here on (the park label included). */
  const journalFrom = transcript.length;

  // 1. Un-park from the transcript alone: its address is recomputed from the store, never carried over.
  if (record.phase === 'parked') {
    if (lease.parkedAtMs === undefined)
      throw new AgentError(
        'state_conflict',
        `turn ${lease.runId} is parked but the lease names no park time`,
      );
    const name = await transcript.name();
    const energy = parkEnergy(
      name.bytes,
      startedMs - lease.parkedAtMs,
      o.storageWattsPerGb ?? DEFAULT_STORAGE_W_PER_GB,
    );
    record.resume(name.address, manifest, energy);
    await transcript.append([
      {
        type: 'extension',
        ext: 'everdict/park',
        data: {
          transcript: name.address,
          bytes: energy.bytes,
          parkedMs: energy.parkedMs,
          wattsPerGb: energy.wattsPerGb,
          idleUj: energy.idleUj.toString(),
          provenance: energy.provenance,
          meter: PARK_METER,
        },
      },
    ]);
  }

  const dispatched: string[] = [];
  const resolved: string[] = [];
  let summary: string | undefined;
  let failure: { code: string; message: string } | undefined;

  try {
    // 2. The opening message, then results that arrived for outstanding calls.
    if (transcript.length === 0 && lease.input)
      await transcript.append([{ type: 'message', role: 'user', content: lease.input.text }]);
    const open = new Set(outstandingCalls(transcript.events).map((c) => c.callId));
    for (const r of lease.resolutions) {
      if (!open.has(r.callId)) continue;
      await transcript.append(resolutionEvents(r));
      open.delete(r.callId);
      resolved.push(r.callId);
    }

    // 3. The loop: model → tool calls → (dispatch | answer) until the model answers or a call is outstanding.
    const provider = o.provider(agent);
    const tools = toolSpecs(agent.tools);
    for (let step = 0; ; step++) {
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
      await transcript.append([
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
        ...completion.toolCalls.map((c) => {
          let input: unknown;
          try {
            input = JSON.parse(c.argumentsJson);
          } catch {
            input = { unparsed: c.argumentsJson };
          }
          return { type: 'tool_call' as const, callId: c.callId, tool: c.tool, input: input as never };
        }),
      ]);
      if (completion.toolCalls.length === 0) {
        summary = completion.content;
        break;
      }
      for (const call of completion.toolCalls) {
        const out = await carryOut(cp, ref, agent.tools, call);
        await transcript.append(out.events);
        if (out.kind !== 'dispatched') continue;
        dispatched.push(call.callId);
        if (o.mode === 'blocking') {
          const r = await cp.awaitResolution(ref, call.callId, o.signal);
          await transcript.append(resolutionEvents(r));
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

  // 4. End the interval: executed (with its account), then park, close or fail.
  const journal = await nameEvents(transcript.events.slice(journalFrom));
  const outstanding = outstandingCalls(transcript.events).map((c) => c.callId);
  const outcome = failure ? 'failed' : summary !== undefined ? 'succeeded' : 'yielded';
  record.executed({
    startedMs,
    endedMs: now(),
    watts: o.agentWatts ?? DEFAULT_AGENT_WATTS,
    journalRoot: journal.address,
    outcome,
    account: { dispatched, resolved },
  });
  const usage = reportUsage(transcript.events);
  if (outcome === 'yielded') {
    const name = await transcript.name();
    record.park(name.address, manifest);
    await cp.report(ref, {
      event: 'awaiting_input',
      record: record.toWire(),
      transcript: name.address,
      outstanding,
      usage,
    });
    return { result: 'parked', runId: lease.runId, outstanding, transcript: name.address };
  }
  // The report goes first: a stale lease is refused there, and then nothing is sealed.
  record.close(outcome === 'succeeded' ? 'completed' : 'failed');
  if (outcome === 'succeeded') {
    await cp.report(ref, {
      event: 'succeeded',
      record: record.toWire(),
      outputs: { summary: summary ?? '' },
      usage,
    });
    await transcript.seal();
    return { result: 'succeeded', runId: lease.runId, summary: summary ?? '' };
  }
  const error = failure ?? { code: 'agent_failed', message: 'failed' };
  await cp.report(ref, { event: 'failed', record: record.toWire(), usage, error });
  await transcript.seal();
  return { result: 'failed', runId: lease.runId, error };
}
