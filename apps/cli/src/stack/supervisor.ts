// A small process supervisor: start children, write their output to log files, stop them all (SIGTERM,
// then SIGKILL after a grace), and tell the caller when one dies on its own.
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import path from 'node:path';
import { makeDirectories } from '../directories.js';

export interface Part {
  readonly name: string;
  readonly child: ChildProcess;
  readonly logFile: string;
  /** Resolves with the exit code (or the signal's name) once the process has exited. */
  readonly exited: Promise<number | string>;
  /** Recent output, for error messages. */
  tail(): string;
}

/**
 * Children still running when this process exits — a second Ctrl-C (`process.exit(130)`), an uncaught error —
 * are SIGKILLed on the way out: the main job never leaves a control plane or an agent behind it (holding the
 * port and the data dir). `exit` handlers run synchronously; `kill` is a synchronous syscall.
 */
const live = new Set<ChildProcess>();
let reaping = false;
function killOnExit(child: ChildProcess): void {
  live.add(child);
  child.once('exit', () => live.delete(child));
  if (reaping) return;
  reaping = true;
  process.once('exit', () => {
    for (const c of live) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  });
}

export function startPart(
  name: string,
  command: string,
  args: readonly string[],
  env: Record<string, string>,
  logDir: string,
): Part {
  makeDirectories(logDir);
  const logFile = path.join(logDir, `${name}.log`);
  const log = createWriteStream(logFile, { flags: 'a' });
  const child = spawn(command, [...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  killOnExit(child);
  let recent = '';
  const keep = (chunk: Buffer) => {
    log.write(chunk);
    recent = (recent + chunk.toString('utf8')).slice(-8000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => {
      log.end();
      resolve(code ?? signal ?? 'unknown');
    });
    child.once('error', (e) => {
      recent += `\n${e.message}`;
      resolve('spawn_error');
    });
  });
  return { name, child, logFile, exited, tail: () => recent };
}

const running = (p: Part) => p.child.exitCode === null && p.child.signalCode === null;

/** SIGTERM each (in the order given), wait up to `graceMs` for all, then SIGKILL what is left. */
export async function stopParts(parts: readonly Part[], graceMs: number): Promise<void> {
  for (const p of parts) if (running(p)) p.child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const all = Promise.all(parts.map((p) => p.exited));
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), graceMs);
  });
  const first = await Promise.race([all, late]);
  clearTimeout(timer);
  if (first === 'late') {
    for (const p of parts) if (running(p)) p.child.kill('SIGKILL');
    await all;
  }
}
