// Where a command writes and what it reads from the environment: passed in, so the whole CLI runs
// in-process in tests with captured output.
export interface Io {
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  readonly stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  readonly env: NodeJS.ProcessEnv;
  /** Aborted on Ctrl-C: long waits (follow, progress) stop and the command answers what it has. */
  readonly signal?: AbortSignal;
}

export function processIo(signal?: AbortSignal): Io {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
    ...(signal ? { signal } : {}),
  };
}

export function line(stream: NodeJS.WritableStream, text = ''): void {
  stream.write(`${text}\n`);
}
