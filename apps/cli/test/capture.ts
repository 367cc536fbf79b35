// Runs `everdict` in-process with captured output.
import { PassThrough, Writable } from 'node:stream';
import { runCli } from '../src/program.js';

export interface Ran {
  code: number;
  out: string;
  err: string;
}

class Sink extends Writable {
  text = '';
  isTTY = false;
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.text += chunk.toString('utf8');
    cb();
  }
}

export async function everdict(
  args: readonly string[],
  env: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<Ran> {
  const stdout = new Sink();
  const stderr = new Sink();
  const code = await runCli(args, {
    stdout,
    stderr,
    stdin: new PassThrough(),
    env: { PATH: process.env.PATH ?? '', ...env },
    ...(signal ? { signal } : {}),
  });
  return { code, out: stdout.text, err: stderr.text };
}
