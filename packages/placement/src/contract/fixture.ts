// What a driver hands the contract suite: how to make it, which commands do what on it, and which image
// it lacks. POSIX drivers (process, kubernetes) use `posixCommands`.
import type { Driver } from '../driver.js';
import type { Command } from '../exec.js';

/** Commands the suite runs. Paths are relative to the workspace (the default working directory). */
export interface ContractCommands {
  /** Prints `text` to stdout, no newline. */
  echo(text: string): Command;
  /** Prints `text` to stderr, no newline. */
  echoErr(text: string): Command;
  exit(code: number): Command;
  /** Copies stdin to stdout. */
  cat(): Command;
  /** Prints the value of an environment variable, no newline. */
  printEnv(name: string): Command;
  sleep(ms: number): Command;
  /** Prints `bytes` bytes to stdout. */
  flood(bytes: number): Command;
  /** Writes `content` to `path` (parents made). */
  writeFile(path: string, content: string): Command;
  /** Prints the content of `path`. */
  readFile(path: string): Command;
  /** Writes `bytes` bytes (all `x`) to `path` (parents made): content too large for an argument. */
  fill?(path: string, bytes: number): Command;
  /** Makes `path` a second hard link to the file `target`. */
  hardLink?(target: string, path: string): Command;
  /**
   * Exits 0 when `path` is a directory (not a symlink to one) the command may write into, non-zero
   * otherwise. Absent for a driver without a filesystem: it refuses a spec's `directories` (`unsupported`).
   */
  writableDirectory?(path: string): Command;
  /**
   * For drivers with a pty: prints `is-a-tty` if stdin is a terminal, then `size ROWS COLS` (stty size);
   * on SIGWINCH prints `winch ROWS COLS` and reads on; exits 0 on a `q` line or end of input.
   */
  ttyProbe?(): Command;
}

export interface DriverFixture {
  /** A fresh driver; when `slots` is given its capacity() must total exactly that many slots. */
  make(options: { slots?: number }): Driver | Promise<Driver>;
  /** Called after every test with each driver made for it (after the suite disposed what it provisioned). */
  close?(driver: Driver): void | Promise<void>;
  commands: ContractCommands;
  /** An image reference this driver does not have (provision must refuse `image_not_found`), or null. */
  missingImage: string | null;
  /** Tenant label prefix for the sandboxes the suite makes (default "contract"). */
  tenant?: string;
}

const sh = (script: string, ...args: string[]): Command => ['sh', '-c', script, 'sh', ...args];

/** The suite's commands for a driver whose images have a POSIX shell. */
export const posixCommands: ContractCommands = {
  echo: (text) => sh('printf %s "$1"', text),
  echoErr: (text) => sh('printf %s "$1" >&2', text),
  exit: (code) => sh('exit "$1"', String(code)),
  cat: () => ['cat'],
  printEnv: (name) => sh('printf %s "$(printenv "$1")"', name),
  sleep: (ms) => ['sleep', (ms / 1000).toFixed(3)],
  flood: (bytes) => sh('head -c "$1" /dev/zero | tr "\\0" x', String(bytes)),
  writeFile: (path, content) => sh('mkdir -p "$(dirname "$1")" && printf %s "$2" > "$1"', path, content),
  readFile: (path) => ['cat', path],
  hardLink: (target, path) => ['ln', target, path],
  fill: (path, bytes) =>
    sh('mkdir -p "$(dirname "$1")" && head -c "$2" /dev/zero | tr "\\0" x > "$1"', path, String(bytes)),
  writableDirectory: (path) => sh('test -d "$1" && ! test -L "$1" && test -w "$1"', path),
  ttyProbe: () =>
    sh(
      [
        'if test -t 0; then echo is-a-tty; fi',
        // dash's `read` returns 1 — as at end of input — when a trapped SIGWINCH interrupts it: `w` tells the two apart
        `trap 'w=1; echo "winch $(stty size)"' WINCH`,
        'echo "size $(stty size)"',
        'while :; do w=0; read -r l; s=$?; if [ $s -eq 0 ] && [ "$l" = q ]; then exit 0; fi; if [ $s -ne 0 ] && [ $w -eq 0 ]; then exit 0; fi; done',
      ].join('; '),
    ),
};
