// Test fixtures shared by the contract suite, the tests and the bench: valid TraceEvents of every kind.
import type { TraceEvent } from '@everdict/run-model';

const T0 = Date.parse('2026-12-01T10:00:00.000Z');

/** `n` events of run `runId` with seq from `fromSeq`, cycling through the event kinds. */
export function sampleEvents(runId: string, fromSeq: number, n: number): TraceEvent[] {
  const out: TraceEvent[] = [];
  for (let i = 0; i < n; i++) {
    const seq = fromSeq + i;
    const ts = new Date(T0 + seq * 7).toISOString();
    switch (seq % 5) {
      case 0:
        out.push({
          type: 'message',
          seq,
          ts,
          runId,
          role: 'user',
          content: `step ${seq}: grep the logs for é and 😀`,
        });
        break;
      case 1:
        out.push({
          type: 'llm_call',
          seq,
          ts,
          runId,
          model: 'gpt-4o-mini',
          inputTokens: 120 + seq,
          outputTokens: 40,
          costUsd: 0.00012,
        });
        break;
      case 2:
        out.push({
          type: 'tool_call',
          seq,
          ts,
          runId,
          callId: `c${seq}`,
          tool: 'grep',
          input: { pattern: 'error', files: ['a.log', 'b.log'], seq },
        });
        break;
      case 3:
        out.push({
          type: 'tool_result',
          seq,
          ts,
          runId,
          callId: `c${seq - 1}`,
          output: { matches: seq % 7, lines: ['x', 'y'] },
        });
        break;
      default:
        out.push({ type: 'log', seq, ts, runId, level: 'info', message: `line ${seq}`, stream: 'stdout' });
    }
  }
  return out;
}
