// A pseudo-terminal for a streamed command, made inside the sandbox by util-linux `script`: the command
// runs with the pty's slave as stdin/stdout/stderr and as its controlling terminal (script makes it a
// session leader), so `test -t 0` holds and job control works. Resizing goes over a pipe the sandbox reads
// as fd 5: a small loop started on the pty's side applies each `rows cols` line with `stty`, which sets the
// window size on the slave; the kernel then sends SIGWINCH to the terminal's foreground process group.
// fd 5 is a socket: after each `stty` the loop writes one byte back on it, the acknowledgement
// pty-input.ts waits for before it passes on the stdin written after that resize.
// What the image needs: `script`, `sh` and `stty` (the default image has them from the host's /usr).
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import type { TerminalSize } from '@everdict/placement';
import { CONTROL_FD } from './sandbox-command.js';

/** The size a pty starts at when the caller gives none. */
export const DEFAULT_TERMINAL_SIZE: TerminalSize = { cols: 80, rows: 24 };

const PTY_TOOLS = ['script', 'sh', 'stty'] as const;
const TOOL_DIRS = ['/usr/bin', '/bin'];

/** Single-quotes one word for sh (no NUL can occur: Command refuses it). */
export function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** Whether the image root (`/` for the default image: the host's /usr) has what a pty needs. */
export async function ptyToolsIn(root: string): Promise<boolean> {
  for (const tool of PTY_TOOLS) {
    let found = false;
    for (const dir of TOOL_DIRS) {
      try {
        await access(join(root, dir, tool));
        found = true;
        break;
      } catch {
        // try the next directory
      }
    }
    if (!found) return false;
  }
  return true;
}

/**
 * The argv that runs `argv` on a fresh pty of `size`. `script` starts `$SHELL -c`, so the sandbox gets
 * SHELL=/bin/sh for it and the command gets back the SHELL it was given (or none).
 */
export function ptyArgv(argv: readonly string[], size: TerminalSize, shell: string | undefined): string[] {
  const restoreShell = shell === undefined ? 'unset SHELL' : `SHELL=${shellQuote(shell)}; export SHELL`;
  const inner = [
    `stty rows ${size.rows} cols ${size.cols} 2>/dev/null`,
    't=$(tty)',
    `(while read -r r c; do stty -F "$t" rows "$r" cols "$c"; echo >&${CONTROL_FD}; done <&${CONTROL_FD} >/dev/null 2>&1 &)`,
    `exec ${CONTROL_FD}<&-`,
    restoreShell,
    `exec ${argv.map(shellQuote).join(' ')}`,
  ].join('; ');
  return ['script', '--quiet', '--flush', '--return', '--command', inner, '/dev/null'];
}

/** The line the resize loop reads. */
export function resizeLine(size: TerminalSize): string {
  return `${size.rows} ${size.cols}\n`;
}
