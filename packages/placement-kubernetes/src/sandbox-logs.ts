// A sandbox's log. Read once (`follow: false`): the log file itself, through an exec of `cat` in the
// container, so the answer holds everything the commands printed before the call (the wrapper has written
// it when an exec returns). Followed: pods/log (client-node's Log) of the container, whose keeper pumps the
// file to its stdout — it streams until the pod stops (dispose) or the caller aborts, and lags the file by
// the keeper's `tail -f` and the node's log pipeline; a real kubelet's log rotation also drops what came
// before the current pod log file from its start.
import { PassThrough } from 'node:stream';
import { CappedOutput, type LogOptions, PlacementError, utf8 } from '@everdict/placement';
import { Log } from '@kubernetes/client-node';
import { openChannel, type SandboxTarget, settledOutcome } from './sandbox-exec.js';
import { CONTAINER, LOG_COMMAND } from './sandbox-scripts.js';

export function sandboxLogs(
  live: () => Promise<SandboxTarget>,
  options: LogOptions,
): AsyncIterable<Uint8Array> {
  return options.follow ? podLogs(live, options.signal) : fileLogs(live, options.signal);
}

/**
 * The log file as it is now, streamed. The exec handshake has `requestTimeoutMs`; so has every wait for
 * the next frame (a `cat` of a file never pauses that long unless the connection hangs).
 */
async function* fileLogs(
  live: () => Promise<SandboxTarget>,
  signal: AbortSignal | undefined,
): AsyncIterable<Uint8Array> {
  const target = await live();
  if (signal?.aborted) return;
  const channel = await openChannel(target, () => LOG_COMMAND, false, false);
  const stderr = new CappedOutput(64 * 1024);
  // frames are timed as they arrive, not as the caller reads them
  const sink = new PassThrough();
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    sink.end();
  };
  let stalled: PlacementError | undefined;
  let timer: NodeJS.Timeout | undefined;
  const quiet = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      stalled = new PlacementError(
        'spawn_failed',
        `the sandbox log read got no data for ${target.requestTimeoutMs} ms`,
        { pod: target.pod },
      );
      end();
      channel.close();
    }, target.requestTimeoutMs);
  };
  quiet();
  void channel.status.then(() => clearTimeout(timer));
  // a caller that reads slowly holds the connection back (the channel stops reading it), never buffering
  // the whole file here; while it does, silence is the caller's, not the node's: the timer waits
  channel.stdout.on('data', (d: Buffer) => {
    quiet();
    if (!ended && !sink.write(d)) {
      channel.stdout.pause();
      clearTimeout(timer);
    }
  });
  sink.on('drain', () => {
    if (ended || !channel.stdout.isPaused()) return;
    quiet();
    channel.stdout.resume();
  });
  channel.stdout.on('end', end);
  channel.stderr.on('data', (d: Buffer) => {
    if (!channel.stdout.isPaused()) quiet();
    stderr.push(d);
  });
  const abort = () => {
    end();
    channel.close();
  };
  signal?.addEventListener('abort', abort, { once: true });
  let read = false;
  try {
    for await (const chunk of sink) yield new Uint8Array(chunk as Buffer);
    if (stalled) throw stalled;
    if (signal?.aborted) return;
    read = true;
    const exitCode = await settledOutcome(target, await channel.status, stderr.bytes());
    if (exitCode !== 0) {
      throw new PlacementError('spawn_failed', `the sandbox log cannot be read: ${utf8(stderr.bytes())}`, {
        pod: target.pod,
        exitCode,
      });
    }
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', abort);
    // a read given up early (aborted, stalled, the caller stopped) may hold the connection unread: a close
    // handshake would wait behind the unread rest, so cut it
    if (read) channel.close();
    else channel.terminate();
  }
}

const NO_ANSWER = Symbol('no answer');

/** pods/log with `follow`; the request's answer (its headers) has `requestTimeoutMs`. */
async function* podLogs(
  live: () => Promise<SandboxTarget>,
  signal: AbortSignal | undefined,
): AsyncIterable<Uint8Array> {
  const target = await live();
  const sink = new PassThrough();
  const request = new Log(target.kc).log(target.namespace, target.pod, CONTAINER, sink, { follow: true });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<typeof NO_ANSWER>((resolve) => {
    timer = setTimeout(() => resolve(NO_ANSWER), target.requestTimeoutMs);
  });
  let answer: AbortController | typeof NO_ANSWER;
  try {
    answer = await Promise.race([request, timeout]);
  } catch (error) {
    throw (
      target.failure() ??
      new PlacementError('gone', `the sandbox log cannot be read: ${(error as Error).message}`, {
        pod: target.pod,
      })
    );
  } finally {
    clearTimeout(timer);
  }
  if (answer === NO_ANSWER) {
    request.then(
      (late) => late.abort(),
      () => undefined,
    );
    throw new PlacementError(
      'spawn_failed',
      `the sandbox log request got no answer in ${target.requestTimeoutMs} ms`,
      { pod: target.pod },
    );
  }
  const controller = answer;
  const abort = () => {
    controller.abort();
    sink.end();
  };
  if (signal?.aborted) abort();
  signal?.addEventListener('abort', abort, { once: true });
  try {
    for await (const chunk of sink) yield new Uint8Array(chunk as Buffer);
  } finally {
    signal?.removeEventListener('abort', abort);
    controller.abort();
  }
}
