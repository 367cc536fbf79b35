// A sandbox's log through pods/log (client-node's Log): the keeper pumps what commands printed to the
// container's stdout, so the pod log is the sandbox log; `follow` streams it until the pod stops
// (dispose) or the caller aborts.
import { PassThrough } from 'node:stream';
import { type LogOptions, PlacementError } from '@everdict/placement';
import { Log } from '@kubernetes/client-node';
import type { SandboxTarget } from './sandbox-exec.js';
import { CONTAINER } from './sandbox-scripts.js';

export async function* podLogs(
  live: () => Promise<SandboxTarget>,
  options: LogOptions,
): AsyncIterable<Uint8Array> {
  const target = await live();
  const sink = new PassThrough();
  let controller: AbortController;
  try {
    controller = await new Log(target.kc).log(target.namespace, target.pod, CONTAINER, sink, {
      follow: options.follow,
    });
  } catch (error) {
    throw (
      target.failure() ??
      new PlacementError('gone', `the sandbox log cannot be read: ${(error as Error).message}`, {
        pod: target.pod,
      })
    );
  }
  const abort = () => {
    controller.abort();
    sink.end();
  };
  if (options.signal?.aborted) abort();
  options.signal?.addEventListener('abort', abort, { once: true });
  try {
    for await (const chunk of sink) yield new Uint8Array(chunk as Buffer);
  } finally {
    options.signal?.removeEventListener('abort', abort);
    controller.abort();
  }
}
