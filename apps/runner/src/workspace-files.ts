// The workspace's files an interval reads after its command: an eval harness's results (out/outputs.json,
// out/trace.jsonl into the journal) and every file of out/ uploaded as an artifact.

import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { setTimeout as delay } from 'node:timers/promises';
import { isClientError } from '@everdict/client';
import type { Driver, SandboxHandle } from '@everdict/placement';
import { isPlacementError, utf8, type WorkspaceFile } from '@everdict/placement';
import { TraceEvent, type Usage, usageFromTrace } from '@everdict/run-model';
import type { ZodError } from 'zod';
import type { IntervalDeps, IntervalHooks } from './interval.js';
import { type Journal, MAX_SENDS } from './journal.js';
import type { BatchResult } from './port.js';
import { type Artifact, HarnessOutputs, type Lease } from './protocol.js';
import { isTransient, retryDelayMs } from './transient.js';

const MiB = 1024 * 1024;
/** The most of out/outputs.json or out/trace.jsonl the runner reads. */
export const HARNESS_FILE_CAP_BYTES = 16 * MiB;
const TOO_LARGE = Symbol('too large');

/**
 * Why a harness file's value does not parse, said so its author can fix it: the first issue at its path
 * (`inputTokens: Invalid input: expected number, received undefined`), and how many more there are.
 */
function firstIssue(error: ZodError): string {
  const [issue, ...rest] = error.issues;
  if (!issue) return 'invalid';
  const at = issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
  const more = rest.length > 0 ? ` (and ${rest.length} more issue${rest.length === 1 ? '' : 's'})` : '';
  return `${at}${issue.message}${more}`;
}

/**
 * out/outputs.json (required) and out/trace.jsonl (optional: validated TraceEvents) of an eval harness. With a
 * trace, `usage` is run-model's fold of its `llm_call` events (tokens, priced cost, calls): what the harness
 * observed of its model calls, reported with the interval so the run's usage and its envelope's spend count
 * them. Without a trace nothing is claimed (no usage, not a zero one).
 */
export async function readHarnessResults(
  driver: Driver,
  handle: SandboxHandle,
  journal: Journal,
): Promise<{ outputs?: HarnessOutputs; problem?: string; usage?: Usage }> {
  // A file past the cap is the harness's output, too large to read: a problem of its interval (which completes
  // failed), not a failure of the runner's (which would leave the lease to expire and the run to be re-run).
  const read = async (path: string): Promise<string | undefined | typeof TOO_LARGE> => {
    try {
      const r = await driver.exec(handle, ['sh', '-c', `[ -f ${path} ] && cat ${path} || exit 3`], {
        timeoutMs: 60_000,
        outputCapBytes: HARNESS_FILE_CAP_BYTES,
        onOutputCap: 'kill',
      });
      return r.exitCode === 0 ? utf8(r.stdout) : undefined;
    } catch (err) {
      if (isPlacementError(err) && err.code === 'output_capped') return TOO_LARGE;
      throw err;
    }
  };
  const tooLarge = (path: string) => `${path} is larger than ${HARNESS_FILE_CAP_BYTES / MiB} MiB`;
  const raw = await read('out/outputs.json');
  if (raw === undefined) return { problem: 'the harness wrote no out/outputs.json' };
  if (raw === TOO_LARGE) return { problem: tooLarge('out/outputs.json') };
  let outputs: HarnessOutputs;
  try {
    const parsed = HarnessOutputs.safeParse(JSON.parse(raw));
    if (!parsed.success) return { problem: `out/outputs.json: ${firstIssue(parsed.error)}` };
    outputs = parsed.data;
  } catch {
    return { problem: 'out/outputs.json is not JSON' };
  }
  const trace = await read('out/trace.jsonl');
  if (trace === TOO_LARGE) return { outputs, problem: tooLarge('out/trace.jsonl') };
  if (trace !== undefined) {
    const lines = trace.split('\n').filter((l) => l.trim() !== '');
    const events: TraceEvent[] = [];
    for (let i = 0; i < lines.length; i++) {
      let value: unknown;
      try {
        value = JSON.parse(lines[i]!);
      } catch {
        return { outputs, problem: `out/trace.jsonl line ${i + 1} is not JSON` };
      }
      const draft: Record<string, unknown> = {
        seq: 0,
        runId: 'x',
        ts: new Date().toISOString(),
        ...(value as object),
      };
      const checked = TraceEvent.safeParse(draft);
      if (!checked.success) {
        const kind = typeof draft.type === 'string' ? ` (${draft.type})` : '';
        return {
          outputs,
          problem: `out/trace.jsonl line ${i + 1} is not a TraceEvent${kind}: ${firstIssue(checked.error)}`,
        };
      }
      events.push(checked.data);
      const { seq: _s, runId: _r, ...event } = checked.data;
      await journal.append(event as Parameters<Journal['append']>[0]);
    }
    return { outputs, usage: usageFromTrace(events) };
  }
  return { outputs };
}

/** What `uploadOut` uploaded, and why out/ could not be read whole when it could not (the driver's message). */
export interface OutUploads {
  artifacts: Artifact[];
  unreadable?: string;
}

/** A file this small is read whole and sent beside others; a larger one streams, alone in its read. */
export const SMALL_ARTIFACT_BYTES = 256 * 1024;
/** Small files' uploads in flight at once (their bytes held meanwhile: at most this × SMALL_ARTIFACT_BYTES). */
export const UPLOADS_IN_FLIGHT = 4;
/**
 * A file this small goes up with others in one call (`RunnerApi.artifacts`: one lease check and one listing
 * transaction for them all), where the control plane takes batches.
 */
export const BATCHED_ARTIFACT_BYTES = 64 * 1024;
/** A batch is sent once it holds this many files… */
export const BATCH_FILES = 64;
/** …or this many bytes (base64 on the wire: ≈ 342 KiB, within the control plane's default 1 MiB body limit). */
export const BATCH_BYTES = 256 * 1024;

/**
 * Every file under the workspace's out/ (a harness's outputs.json and trace.jsonl too), uploaded as it streams
 * out of the sandbox (`Driver.files`: one file at a time, never the whole of out/ in memory) — until `signal`
 * aborts: the uploads in flight are given it, and no other starts. A file larger than the control plane takes
 * (413 `artifact_too_large`) is left out, and the journal says so (an `error` event naming it): the run's other
 * outputs still count, and no later attempt would fare better. Listed by name.
 *
 * Small files (≤ `SMALL_ARTIFACT_BYTES`) are read whole and up to `deps.uploadsInFlight` (`UPLOADS_IN_FLIGHT`) of
 * them go at once, so an out/ of many small files does not pay a round trip each in turn; a larger file streams
 * from the sandbox into its upload (the archive waits on it); one whose upload failed transiently is read again
 * from a new pass over out/ after this one, up to MAX_SENDS sends in all. An upload that fails otherwise stops the
 * reading; the ones in flight are waited for, and the first failure is thrown. Files of at most
 * `BATCHED_ARTIFACT_BYTES` go in batches where the port has `artifacts` (below): each batch is one of the
 * uploads in flight, so the runner holds at most about (`uploadsInFlight` + 1) × (`BATCH_BYTES` +
 * `BATCHED_ARTIFACT_BYTES`) of them.
 */
export async function uploadOut(
  deps: Pick<IntervalDeps, 'api' | 'driver' | 'uploadsInFlight'>,
  lease: Pick<Lease, 'runId' | 'epoch'>,
  handle: SandboxHandle,
  hooks: Pick<IntervalHooks, 'uploading'>,
  signal: AbortSignal,
  journal: Pick<Journal, 'append'>,
): Promise<OutUploads> {
  const out: Artifact[] = [];
  const leftOut = (file: WorkspaceFile) =>
    journal.append({
      type: 'error',
      code: 'artifact_too_large',
      message: `out/${file.path} (${file.size} bytes) is larger than the control plane takes: not uploaded`,
    });
  // The control plane's bound, once a 413 has named it: a larger file after that is not sent at all.
  let maxBytes: number | undefined;
  let unreadable: string | undefined;
  let failure: { error: unknown } | undefined;
  const inFlight = new Set<Promise<void>>();
  /** Streamed files whose upload failed transiently, with the last such failure: sent again after this pass. */
  const again = new Map<string, unknown>();
  const most = Math.max(1, deps.uploadsInFlight ?? UPLOADS_IN_FLIGHT);
  let started = false;

  // One file's upload; bytes held whole are sent again after a transient failure (a 5xx, no answer: transient.ts)
  // as the journal's batches are — the control plane takes a repeat as the original. A streamed file's bytes came
  // out of the sandbox's archive once: it is read again from a new pass over out/ once this one ends (`again`).
  const send = async (file: WorkspaceFile, body: Readable | Buffer) => {
    for (let failures = 0; ; failures++) {
      const content = Buffer.isBuffer(body) ? Readable.from([body]) : body;
      try {
        return await deps.api.artifact(lease.runId, lease.epoch, file.path, content, signal);
      } catch (err) {
        if (!Buffer.isBuffer(body) || !isTransient(err) || failures + 1 >= MAX_SENDS || signal.aborted)
          throw err;
      }
      await delay(retryDelayMs(failures), undefined, { signal }).catch(() => undefined);
    }
  };
  const upload = async (file: WorkspaceFile, body: Readable | Buffer): Promise<void> => {
    if (!started) hooks.uploading?.();
    started = true;
    const stored = await send(file, body).catch((err: unknown) => {
      if (!isClientError(err, 'artifact_too_large')) throw err;
      const details = err.problem?.details;
      const bound =
        typeof details === 'object' && details !== null
          ? (details as { maxBytes?: unknown }).maxBytes
          : undefined;
      if (typeof bound === 'number') maxBytes = bound;
      return null;
    });
    if (!stored) {
      await leftOut(file);
      return;
    }
    out.push({
      name: file.path,
      uri: `artifact:${stored.address}`,
      bytes: stored.size,
      digest: stored.address,
    });
  };
  const track = (work: Promise<void>) => {
    const sent: Promise<void> = work
      .catch((error: unknown) => {
        failure ??= { error };
      })
      .finally(() => inFlight.delete(sent));
    inFlight.add(sent);
  };
  const beside = (file: WorkspaceFile, bytes: Buffer) => track(upload(file, bytes));

  // Batches of files ≤ BATCHED_ARTIFACT_BYTES: held until BATCH_FILES or BATCH_BYTES, then sent beside the rest.
  // A batch is sent again whole after a transient failure, as a small file is. A control plane that has no batch
  // route (404 `route_not_found`: an older one) or takes no body that large (413 `body_too_large`) gets each of
  // its files alone, and no batch after it.
  let batching = deps.api.artifacts !== undefined;
  let pending: { file: WorkspaceFile; bytes: Buffer }[] = [];
  let pendingBytes = 0;
  const uploadBatch = async (files: { file: WorkspaceFile; bytes: Buffer }[]): Promise<void> => {
    if (!started) hooks.uploading?.();
    started = true;
    const batch = files.map((f) => ({ path: f.file.path, bytes: f.bytes }));
    let results: BatchResult[];
    for (let failures = 0; ; failures++) {
      try {
        results = await deps.api.artifacts!(lease.runId, lease.epoch, batch, signal);
        break;
      } catch (err) {
        if (isClientError(err, 'route_not_found') || isClientError(err, 'body_too_large')) {
          batching = false;
          for (const f of files) await upload(f.file, f.bytes);
          return;
        }
        if (!isTransient(err) || failures + 1 >= MAX_SENDS || signal.aborted) throw err;
      }
      await delay(retryDelayMs(failures), undefined, { signal }).catch(() => undefined);
    }
    for (const [i, r] of results.entries()) {
      const { file } = files[i]!;
      if (r.status === 413) {
        maxBytes = r.maxBytes;
        await leftOut(file);
      } else out.push({ name: file.path, uri: `artifact:${r.address}`, bytes: r.size, digest: r.address });
    }
  };
  const flush = async () => {
    if (pending.length === 0) return;
    const files = pending;
    pending = [];
    pendingBytes = 0;
    while (inFlight.size >= most) await Promise.race(inFlight);
    if (failure || signal.aborted) return;
    track(uploadBatch(files));
  };

  try {
    for await (const file of deps.driver.files(handle, 'out')) {
      if (signal.aborted || failure) break;
      if (maxBytes !== undefined && file.size > maxBytes) {
        await leftOut(file);
        continue;
      }
      if (file.size > SMALL_ARTIFACT_BYTES) {
        await upload(file, file.content).catch((err: unknown) => {
          if (!isTransient(err) || signal.aborted) throw err;
          again.set(file.path, err);
        });
        continue;
      }
      if (batching && file.size <= BATCHED_ARTIFACT_BYTES) {
        const bytes = await buffer(file.content);
        pending.push({ file, bytes });
        pendingBytes += bytes.byteLength;
        if (pending.length >= BATCH_FILES || pendingBytes >= BATCH_BYTES) await flush();
        continue;
      }
      // A free place first, then the bytes: at most `most` small files are held at once.
      while (inFlight.size >= most) await Promise.race(inFlight);
      if (failure || signal.aborted) break;
      beside(file, await buffer(file.content));
    }
    // Each new pass over out/ sends the streamed files that failed transiently again, the rest left unread,
    // after the journal's doubling pause — a file sent MAX_SENDS times in all, then its last failure is thrown.
    for (let sends = 1; again.size > 0 && !failure && !signal.aborted; sends++) {
      if (sends >= MAX_SENDS) throw again.values().next().value;
      await delay(retryDelayMs(sends - 1), undefined, { signal }).catch(() => undefined);
      for await (const file of deps.driver.files(handle, 'out')) {
        if (signal.aborted || failure) break;
        if (!again.has(file.path)) continue;
        await upload(file, file.content).then(
          () => again.delete(file.path),
          (err: unknown) => {
            if (!isTransient(err) || signal.aborted) throw err;
            again.set(file.path, err);
          },
        );
      }
    }
  } catch (err) {
    // The driver's refusal to read out/ (its archiver failed: a file the sandbox user cannot read) is the
    // run's outcome, told to the interval; an upload's failure, or an abort, is not.
    if (!isPlacementError(err) || signal.aborted) failure ??= { error: err };
    else unreadable = err.message;
  } finally {
    // The files held for a batch go up too — also when out/ could not be read to its end (`unreadable`).
    if (!failure && !signal.aborted) await flush();
    await Promise.allSettled([...inFlight]);
  }
  if (failure) throw failure.error;
  const artifacts = out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return unreadable === undefined ? { artifacts } : { artifacts, unreadable };
}
