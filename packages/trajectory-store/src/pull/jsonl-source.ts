// A TraceSource over a JSONL file or an http(s) URL. Each line is either a run-model TraceEvent (grouped
// by its runId, ordered by seq; externalId = runId) or an OTLP/JSON ExportTraceServiceRequest (its spans
// mapped as OTLP imports are, grouped by trace id; externalId = trace id). Blank lines are skipped; any
// other line is a `bad_request` naming its line number. The whole source is read before the first trace is
// yielded (traces may interleave), so it is meant for exports of bounded size (`maxLines`).
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { TraceEvent } from '@everdict/run-model';
import { TrajectoryStoreError } from '../errors.js';
import type { TraceEventDraft } from '../events.js';
import { decodeOtlpJson, type OtlpSpan } from '../otlp/otlp-decode.js';
import { spansToDrafts } from '../otlp/otlp-map.js';
import type { PulledTrace, TraceSource } from './trace-source.js';

export interface JsonlSourceOptions {
  /** A file path, or an http:// / https:// URL. */
  readonly location: string;
  /** The provenance `source` (default `jsonl`). */
  readonly source?: string;
  /** Refuse sources longer than this (default 1,000,000 lines). */
  readonly maxLines?: number;
}

async function lines(location: string, signal?: AbortSignal): Promise<AsyncIterable<string>> {
  if (/^https?:\/\//i.test(location)) {
    let res: Response;
    try {
      res = await fetch(location, signal ? { signal } : {});
    } catch (err) {
      throw new TrajectoryStoreError('storage_unavailable', `pull ${location}: ${(err as Error).message}`);
    }
    if (!res.ok || !res.body)
      throw new TrajectoryStoreError('storage_unavailable', `pull ${location}: HTTP ${res.status}`);
    return createInterface({ input: Readable.fromWeb(res.body as import('node:stream/web').ReadableStream) });
  }
  const input = createReadStream(location);
  await new Promise<void>((resolve, reject) => {
    input.once('open', () => resolve());
    input.once('error', (err) =>
      reject(new TrajectoryStoreError('storage_unavailable', `pull ${location}: ${err.message}`)),
    );
  });
  return createInterface({ input });
}

export class JsonlTraceSource implements TraceSource {
  readonly source: string;
  readonly #location: string;
  readonly #maxLines: number;

  constructor(options: JsonlSourceOptions) {
    this.#location = options.location;
    this.source = options.source ?? 'jsonl';
    this.#maxLines = options.maxLines ?? 1_000_000;
  }

  async *pull(signal?: AbortSignal): AsyncIterable<PulledTrace> {
    const runs = new Map<string, TraceEvent[]>();
    const traces = new Map<string, OtlpSpan[]>();
    let n = 0;
    for await (const line of await lines(this.#location, signal)) {
      n++;
      if (n > this.#maxLines)
        throw new TrajectoryStoreError('bad_request', `${this.#location}: over ${this.#maxLines} lines`);
      if (line.trim() === '') continue;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        throw new TrajectoryStoreError('bad_request', `${this.#location} line ${n}: not JSON`);
      }
      if (value && typeof value === 'object' && 'resourceSpans' in value) {
        for (const span of decodeOtlpJson(value))
          traces.set(span.traceId, [...(traces.get(span.traceId) ?? []), span]);
        continue;
      }
      const event = TraceEvent.safeParse(value);
      if (!event.success)
        throw new TrajectoryStoreError(
          'bad_request',
          `${this.#location} line ${n}: neither a TraceEvent nor OTLP JSON`,
        );
      const parsed = event.data; // an own `__proto__` key kept (run-model's JSON values)
      const list = runs.get(parsed.runId) ?? [];
      list.push(parsed);
      runs.set(parsed.runId, list);
    }
    for (const [runId, events] of runs) {
      events.sort((a, b) => a.seq - b.seq);
      yield {
        externalId: runId,
        events: events.map(({ seq: _s, runId: _r, ...draft }) => draft as TraceEventDraft),
      };
    }
    for (const [traceId, spans] of traces) yield { externalId: traceId, events: spansToDrafts(spans) };
  }
}
