// The shell the driver runs inside a sandbox pod (images need a POSIX sh, mkfifo, tee, tail, tar, head).
// The keeper is the container's main process: it idles and pumps the sandbox log file to its stdout, so
// the pod log (pods/log, `kubectl logs`) is what the sandbox's commands printed. Every command runs under
// the exec wrapper, which applies env and cwd, records its pid (so it can be killed: closing an exec
// connection does not stop the process), and tees its stdout and stderr into the log (terminal sessions
// keep their terminal and are not logged). A non-follow read of the log reads the file itself (LOG_COMMAND):
// the pod log lags it (the keeper's tail, the runtime's log pipeline).

export const CONTAINER = 'sandbox';
export const CONTROL_ENV = 'EVERDICT_CONTROL_DIR';
/** What the wrapper prints (alone on stderr, exit 127) when the program does not exist. */
export const NOT_FOUND_MARKER = 'everdict-exec: not found: ';

export const KEEPER = [
  'sh',
  '-c',
  [
    `c=$${CONTROL_ENV}`,
    ': >>"$c/log"',
    // the keeper's own stderr is not the sandbox's log: a shell reports a job a signal ended ("Terminated")
    // there, and the pod log would show it as if a command had printed it
    'exec 2>/dev/null',
    "trap 'kill $t 2>/dev/null; exit 0' TERM INT",
    'tail -n +1 -f "$c/log" & t=$!',
    'wait $t',
  ].join('; '),
];

const WRAPPER = [
  `c=$${CONTROL_ENV}; id=$0; d=$1; n=$2; shift 2`,
  'while [ "$1" != -- ]; do export "$1"; shift; done; shift',
  'cd "$d" 2>/dev/null || { printf "everdict-exec: cannot enter %s\\n" "$d" >&2; exit 126; }',
  `command -v "$1" >/dev/null 2>&1 || { printf "${NOT_FOUND_MARKER}%s\\n" "$1" >&2; exit 127; }`,
  'f=$c/exec-$id',
  'if [ "$n" = tty ]; then echo $$ >"$f.pid"; exec "$@"; fi',
  'mkfifo "$f.o" "$f.e" || exit 125',
  'tee -a "$c/log" <"$f.o" &',
  'tee -a "$c/log" <"$f.e" >&2 &',
  'exec 3<&0',
  'if [ "$n" = - ]; then "$@" <&3 >"$f.o" 2>"$f.e" & else head -c "$n" <&3 | "$@" >"$f.o" 2>"$f.e" & fi',
  'echo $! >"$f.pid"; wait $!; s=$?; wait',
  'rm -f "$f.o" "$f.e" "$f.pid"; exit $s',
].join('\n');

export interface WrapOptions {
  execId: string;
  cwd: string | undefined;
  env: Record<string, string>;
  /** Bytes of stdin to pass before the command sees EOF (for v4, which cannot close stdin), or undefined. */
  stdinBytes: number | undefined;
  /** A terminal session: the command gets the terminal itself (no tee into the log). */
  tty: boolean;
}

export function wrapCommand(command: string[], options: WrapOptions): string[] {
  const env = Object.entries(options.env).map(([k, v]) => `${k}=${v}`);
  return [
    'sh',
    '-c',
    WRAPPER,
    options.execId,
    options.cwd ?? '.',
    options.tty ? 'tty' : options.stdinBytes === undefined ? '-' : String(options.stdinBytes),
    ...env,
    '--',
    ...command,
  ];
}

/** Stops a wrapped command (SIGKILL to the recorded pid). */
export function killCommand(execId: string): string[] {
  return [
    'sh',
    '-c',
    `kill -KILL "$(cat "$${CONTROL_ENV}/exec-$0.pid" 2>/dev/null)" 2>/dev/null; exit 0`,
    execId,
  ];
}

/** The sandbox log file as it is now; nothing (exit 0) before the keeper has created it. */
export const LOG_COMMAND = ['sh', '-c', `f=$${CONTROL_ENV}/log; [ -e "$f" ] || exit 0; exec cat "$f"`];

/** The workspace (the container's working directory) as a tar on stdout. */
export const SNAPSHOT_COMMAND = ['tar', '-cf', '-', '.'];

/**
 * The regular files under the workspace directory `$1` as a tar on stdout; nothing when `$1` is absent, not a
 * directory, or a symlink. GNU tar archives a hard link as the file it is (`--hard-dereference`); another tar
 * (BusyBox's, say) may write a second link to a file as a link entry, which `files` passes over.
 */
export function filesCommand(dir: string): string[] {
  return [
    'sh',
    '-c',
    '[ -d "$1" ] && [ ! -L "$1" ] || exit 0; cd -- "$1" || exit 1; ' +
      'if tar --version 2>/dev/null | grep -q GNU; then exec tar --hard-dereference -cf - .; fi; exec tar -cf - .',
    'sh',
    dir,
  ];
}

/**
 * Makes the spec's `directories` in the workspace (the working directory), parents first, mode 0755; a path
 * segment that is there as anything but a directory (a file, a symlink — never followed) fails it (exit 1,
 * the reason on stderr). Each path is split on `/` only (`set -f`: no globbing).
 */
export function directoriesCommand(paths: readonly string[]): string[] {
  return [
    'sh',
    '-c',
    [
      'umask 022; set -f',
      'for p in "$@"; do d=.; IFS=/; for s in $p; do d=$d/$s',
      '  if [ -L "$d" ] || { [ -e "$d" ] && [ ! -d "$d" ]; }; then printf "%s is in the workspace and not a directory\n" "$d" >&2; exit 1; fi',
      '  [ -d "$d" ] || mkdir "$d" || exit 1',
      'done; done',
    ].join('\n'),
    'sh',
    ...paths,
  ];
}

/** Empties the workspace and unpacks `bytes` bytes of tar from stdin into it, modes as archived. */
export function restoreCommand(bytes: number): string[] {
  return ['sh', '-c', 'umask 0; rm -rf ./* ./.[!.]* ./..?* && head -c "$0" | tar -xf -', String(bytes)];
}
