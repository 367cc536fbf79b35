// Runs `everdict` in-process with captured output.
import { PassThrough, Writable } from 'node:stream';
import { runCli } from '../src/program.js';

export interface Ran {
  code: number;
  out: string;
  err: string;
}

export class Sink extends Writable {
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
  stdinText?: string,
): Promise<Ran> {
  return started(args, env, signal, stdinText).ran;
}

/** `everdict args` under way: what it has printed so far, and its outcome once it ends. */
export function started(
  args: readonly string[],
  env: Record<string, string> = {},
  signal?: AbortSignal,
  stdinText?: string,
): { ran: Promise<Ran>; printed: () => string } {
  const stdout = new Sink();
  const stderr = new Sink();
  const stdin = new PassThrough();
  if (stdinText !== undefined) stdin.end(stdinText);
  const ran = runCli(args, {
    stdout,
    stderr,
    stdin,
    env: { PATH: process.env.PATH ?? '', ...env },
    ...(signal ? { signal } : {}),
  }).then((code) => ({ code, out: stdout.text, err: stderr.text }));
  return { ran, printed: () => stdout.text + stderr.text };
}
