// How a remote stream's exit settles (channel.ts locally, relay.ts across replicas): both outputs end, then a
// refusal rejects at once, and an exit resolves — as the ExecStream contract says — only once both output
// streams have ended (their bytes delivered).
import type { PassThrough } from 'node:stream';
import { finished } from 'node:stream/promises';
import { PlacementError, type StreamExit } from '@everdict/placement';

export function endStreams(
  stdout: PassThrough,
  stderr: PassThrough,
  x: StreamExit | PlacementError,
  resolve: (x: StreamExit) => void,
  reject: (e: PlacementError) => void,
): void {
  stdout.end();
  stderr.end();
  if (x instanceof PlacementError) reject(x);
  else
    void Promise.all([finished(stdout), finished(stderr)]).then(
      () => resolve(x),
      () => resolve(x),
    );
}
