// Carrying out one tool call the model made. Every outcome becomes transcript events: an immediate result
// (read_run), a dispatch (run_command, start_experiment, ask_approval — the result arrives later), or a
// refusal the model sees as a tool error with its code and status (bad arguments, a tool this agent was
// not granted, the envelope's 402, a tool this deployment cannot run yet).
import type { ToolName } from '../agent-spec.js';
import type { ControlPlane, LeaseRef, Resolution } from '../control-plane.js';
import { AgentError, isAgentError } from '../errors.js';
import type { ToolCall } from '../model/provider.js';
import type { TranscriptDraft } from '../transcript/transcript.js';
import { AskApprovalArgs, ReadRunArgs, RunCommandArgs, StartExperimentArgs, TOOLS } from './catalog.js';

export type CallOutcome =
  | { readonly kind: 'answered'; readonly events: TranscriptDraft[] }
  | { readonly kind: 'dispatched'; readonly events: TranscriptDraft[] };

function refused(call: ToolCall, e: AgentError): CallOutcome {
  return {
    kind: 'answered',
    events: [{ type: 'tool_result', callId: call.callId, output: e.toToolOutput(), isError: true }],
  };
}

function parseArgs(call: ToolCall): unknown {
  try {
    return JSON.parse(call.argumentsJson);
  } catch {
    throw new AgentError('bad_request', `${call.tool}: arguments are not JSON`);
  }
}

function argsOf<T>(
  schema: { safeParse(v: unknown): { success: boolean; data?: T; error?: { message: string } } },
  call: ToolCall,
): T {
  const r = schema.safeParse(parseArgs(call));
  if (!r.success)
    throw new AgentError('bad_request', `${call.tool}: ${r.error?.message ?? 'invalid arguments'}`);
  return r.data as T;
}

export async function carryOut(
  cp: ControlPlane,
  lease: LeaseRef,
  granted: readonly ToolName[],
  call: ToolCall,
): Promise<CallOutcome> {
  try {
    if (!(granted as readonly string[]).includes(call.tool))
      throw new AgentError('tool_unavailable', `tool ${call.tool} is not granted to this agent`);
    const tool = call.tool as ToolName;
    switch (tool) {
      case 'read_run': {
        const a = argsOf<ReturnType<typeof ReadRunArgs.parse>>(ReadRunArgs, call);
        const output = await cp.readRun(lease, a.runId, a.what, { offset: a.offset, limit: a.limit });
        return {
          kind: 'answered',
          events: [{ type: 'tool_result', callId: call.callId, output: JSON.parse(JSON.stringify(output)) }],
        };
      }
      case 'run_command': {
        const a = argsOf<ReturnType<typeof RunCommandArgs.parse>>(RunCommandArgs, call);
        await cp.startCommandRun(lease, call.callId, a);
        return { kind: 'dispatched', events: [] };
      }
      case 'start_experiment': {
        const a = argsOf<ReturnType<typeof StartExperimentArgs.parse>>(StartExperimentArgs, call);
        const started = await cp.startExperiment(lease, call.callId, a);
        // The group it started is in the transcript at once; its result arrives when every run settled.
        return {
          kind: 'dispatched',
          events: [
            {
              type: 'extension',
              ext: 'everdict/experiment',
              data: { callId: call.callId, groupId: started.groupId, runIds: started.runIds },
            },
          ],
        };
      }
      case 'ask_approval': {
        const a = argsOf<ReturnType<typeof AskApprovalArgs.parse>>(AskApprovalArgs, call);
        await cp.requestApproval(lease, call.callId, a.question);
        return {
          kind: 'dispatched',
          events: [
            {
              type: 'extension',
              ext: 'approval',
              data: {
                requestId: call.callId,
                decision: 'requested',
                tool: 'ask_approval',
                callId: call.callId,
              },
            },
          ],
        };
      }
    }
  } catch (e) {
    if (isAgentError(e) && e.code !== 'stale_lease' && e.code !== 'control_plane_unavailable')
      return refused(call, e);
    throw e;
  }
  return refused(call, new AgentError('tool_unavailable', `unknown tool ${call.tool}`));
}

export function isLongTool(name: string): boolean {
  return name in TOOLS && TOOLS[name as ToolName].long;
}

/** The events that record a result arriving for a dispatched call. */
export function resolutionEvents(r: Resolution): TranscriptDraft[] {
  if (r.kind === 'approval')
    return [
      {
        type: 'extension',
        ext: 'approval',
        data: {
          requestId: r.callId,
          decision: r.approved ? 'approved' : 'denied',
          tool: 'ask_approval',
          callId: r.callId,
          ...(r.by ? { by: r.by } : {}),
          ...(r.note ? { reason: r.note } : {}),
        },
      },
      {
        type: 'tool_result',
        callId: r.callId,
        output: { approved: r.approved, ...(r.note ? { note: r.note } : {}) },
      },
    ];
  if (r.kind === 'experiment')
    return [
      {
        type: 'tool_result',
        callId: r.callId,
        output: { groupId: r.groupId, status: r.status, runs: r.runs.map((x) => ({ ...x })) },
        ...(r.status === 'failed' || r.status === 'cancelled' ? { isError: true } : {}),
      },
    ];
  return [
    {
      type: 'tool_result',
      callId: r.callId,
      output: {
        runId: r.runId,
        status: r.status,
        ...(r.outputs !== undefined ? { outputs: r.outputs } : {}),
      },
      ...(r.status !== 'succeeded' ? { isError: true } : {}),
    },
  ];
}
