// The server side of the exec subresource's WebSocket channel protocol (v4 / v5.channel.k8s.io): every
// binary message is [channel, …bytes]; 0 stdin, 1 stdout, 2 stderr, 3 the final V1Status (exit code in
// details.causes), 4 terminal resize {"Width","Height"}; v5 adds [255, channel] to close a stream (the
// client's end of stdin). The socket closes after the status.
import { finished } from 'node:stream/promises';
import type { WebSocket } from 'ws';
import type { ContainerProcess } from './pods/container-runner.js';

export const EXEC_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'] as const;
export type ExecProtocol = (typeof EXEC_PROTOCOLS)[number];

const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const STATUS = 3;
const RESIZE = 4;
const CLOSE = 255;

export interface ExecStreams {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/** The V1Status sent on channel 3 when a command ends (the shape kubelet's remotecommand writes). */
export function exitStatus(argv: string[], exitCode: number): Record<string, unknown> {
  if (exitCode === 0) return { metadata: {}, status: 'Success' };
  return {
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: error executing command [${argv.join(' ')}], exit code ${exitCode}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(exitCode) }] },
  };
}

function startFailure(message: string): Record<string, unknown> {
  return {
    metadata: {},
    status: 'Failure',
    message: `Internal error occurred: ${message}`,
    reason: 'InternalError',
    code: 500,
  };
}

export function runExecSession(
  ws: WebSocket,
  protocol: ExecProtocol,
  proc: ContainerProcess,
  streams: ExecStreams,
  argv: string[],
): void {
  const send = (channel: number, data: Buffer) => {
    if (ws.readyState === ws.OPEN) ws.send(Buffer.concat([Buffer.from([channel]), data]));
  };
  proc.stdout.on('data', (d: Buffer) => {
    if (streams.stdout) send(STDOUT, d);
  });
  proc.stderr.on('data', (d: Buffer) => {
    if (streams.stderr) send(streams.tty ? STDOUT : STDERR, d);
  });
  ws.on('message', (raw: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => {
    const data = Buffer.isBuffer(raw) ? raw : Array.isArray(raw) ? Buffer.concat(raw) : Buffer.from(raw);
    if (!isBinary || data.length === 0) return;
    const channel = data[0];
    if (channel === STDIN) proc.stdin?.write(data.subarray(1));
    else if (channel === RESIZE) {
      try {
        const size = JSON.parse(data.subarray(1).toString('utf8')) as { Width?: number; Height?: number };
        proc.resize(size.Width ?? 0, size.Height ?? 0);
      } catch {
        // a malformed resize is ignored, as the kubelet does
      }
    } else if (channel === CLOSE && protocol === 'v5.channel.k8s.io' && data[1] === STDIN) proc.stdin?.end();
  });
  // without v5's close signal, a client ends stdin by closing the connection
  ws.on('close', () => proc.stdin?.end());

  const outputDone = Promise.all([
    finished(proc.stdout).catch(() => {}),
    finished(proc.stderr).catch(() => {}),
  ]);
  Promise.all([proc.exit, outputDone]).then(
    ([exit]) => {
      send(STATUS, Buffer.from(JSON.stringify(exitStatus(argv, exit.exitCode))));
      ws.close(1000);
    },
    (error: unknown) => {
      send(
        STATUS,
        Buffer.from(JSON.stringify(startFailure(error instanceof Error ? error.message : String(error)))),
      );
      ws.close(1000);
    },
  );
}
