// An implementation under test, driven only through the command-line contract:
// `<impl> build < ops.json` and `<impl> verify [--expect-head HEX] < wire.json`, and the head log's
// `<impl> log-root | log-verify-inclusion | log-verify-consistency < input.json`.
import { spawn } from 'node:child_process';

/** `build`, `verify`, a `log-*` command — or one no contract names (the suite checks it exits 2). */
export type Subcommand = string;

export interface Invocation {
  readonly exitCode: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly timedOut: boolean;
}

export interface Implementation {
  readonly label: string;
  invoke(subcommand: Subcommand, stdin: string, args: readonly string[]): Promise<Invocation>;
}

function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_./:=@-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`;
}

/**
 * Runs `<command> <subcommand> <args…>` through a shell in `cwd`; a run past `timeoutMs` is killed,
 * group and all.
 */
export function commandImplementation(
  command: string,
  timeoutMs: number,
  cwd = process.cwd(),
): Implementation {
  return {
    label: command,
    invoke(subcommand, stdin, args) {
      const line = [command, subcommand, ...args.map(shellQuote)].join(' ');
      return new Promise((resolve) => {
        const child = spawn(line, { cwd, shell: true, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
        const out: Buffer[] = [];
        const err: Buffer[] = [];
        let timedOut = false;
        const timer = setTimeout(() => {
          timedOut = true;
          try {
            if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
          } catch {
            child.kill('SIGKILL');
          }
        }, timeoutMs);
        child.stdout.on('data', (b: Buffer) => out.push(b));
        child.stderr.on('data', (b: Buffer) => err.push(b));
        child.stdin.on('error', () => {}); // an implementation may exit without reading its input
        child.on('error', (e) => err.push(Buffer.from(String(e))));
        child.on('close', (code) => {
          clearTimeout(timer);
          resolve({
            exitCode: code,
            stdout: Buffer.concat(out).toString('utf8'),
            stderr: Buffer.concat(err).toString('utf8'),
            timedOut,
          });
        });
        child.stdin.end(stdin);
      });
    },
  };
}
