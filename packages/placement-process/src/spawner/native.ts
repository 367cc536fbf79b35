// Building the native spawner (native/spawner.c: the same job and protocol as the Node spawner, script.ts;
// README, Spawner) once per state directory: `cc` compiles it into
// `<stateDir>/bin/spawner-<hash of source and arch>` (mode 0700, written under a temporary name and renamed
// in, so concurrent drivers on one state directory never run a half-written file). Found there, it is
// reused; no compiler, or a failed build, and the driver keeps the Node spawner (script.ts): a fresh
// machine still runs, only with more CPU per sandbox.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The C source, shipped in the package beside dist/ (`files`): one level up from the bundle (dist/*.js), two
 * from this module's source (src/spawner/, where the tests import it).
 */
const SOURCE_URLS = ['../native/spawner.c', '../../native/spawner.c'].map((p) => new URL(p, import.meta.url));
let source: string | undefined;
const nativeSource = (): string => {
  if (source !== undefined) return source;
  for (const url of SOURCE_URLS) {
    try {
      source = readFileSync(url, 'utf8');
      return source;
    } catch {
      // the other layout
    }
  }
  throw new Error('native/spawner.c is not in this package');
};

/** The compiler command: `CC` when set (one word), else `cc`. */
const compiler = (): string => process.env.CC?.trim() || 'cc';

/** Where the program for this source is kept under `dir`. */
export function nativeSpawnerPath(dir: string): string {
  const hash = createHash('sha256').update(process.arch).update(nativeSource()).digest('hex');
  return join(dir, `spawner-${hash.slice(0, 16)}`);
}

/** The native spawner's path under `dir`, built first when missing; null when it cannot be built. */
export async function buildNativeSpawner(dir: string): Promise<string | null> {
  let path: string;
  try {
    path = nativeSpawnerPath(dir);
  } catch {
    return null; // the source is not where the package ships it: the Node spawner
  }
  const usable = async () => {
    const s = await stat(path).catch(() => null);
    // Ours and executable only: a file another user could have written is never run.
    return (
      s?.isFile() === true && s.uid === process.getuid?.() && (s.mode & 0o022) === 0 && (s.mode & 0o100) !== 0
    );
  };
  if (await usable()) return path;
  const temporary = `${path}.${process.pid}.${Date.now()}.tmp`;
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await new Promise<void>((resolve, reject) => {
      const cc = execFile(
        compiler(),
        ['-O2', '-pthread', '-o', temporary, '-x', 'c', '-'],
        { timeout: 120_000, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } },
        (error) => (error ? reject(error) : resolve()),
      );
      cc.stdin?.on('error', () => undefined);
      cc.stdin?.end(nativeSource());
    });
    await rename(temporary, path);
  } catch {
    await rm(temporary, { force: true }).catch(() => undefined);
    return null;
  }
  return (await usable()) ? path : null;
}
