// Test helpers: a driver on a fresh state directory (removed afterwards), and the requirement that real
// bubblewrap is here — a missing bwrap fails the suite, never skips it.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessDriver } from '../src/process-driver.js';
import type { ProcessDriverConfigInput } from '../src/process-driver-config.js';

export function requireBwrap(): string {
  const version = execFileSync('bwrap', ['--version'], { encoding: 'utf8' }).trim();
  const m = /bubblewrap (\d+)\.(\d+)/.exec(version);
  if (!m || Number(m[1]) * 100 + Number(m[2]) < 8)
    throw new Error(`bubblewrap ≥ 0.8 needed, found ${version}`);
  return version;
}

const made: Array<{ driver: ProcessDriver; dir: string }> = [];

/** A fresh directory the sandbox user may pass through (0711), as a state directory's parents must be. */
export function tempDir(prefix = 'everdict-pd-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o711);
  return dir;
}

export function makeDriver(config: ProcessDriverConfigInput = {}): ProcessDriver {
  const dir = tempDir();
  const driver = new ProcessDriver({
    stateDir: join(dir, 'state'),
    imagesDir: join(dir, 'images'),
    ...config,
  });
  made.push({ driver, dir });
  return driver;
}

export function removeDriverDirs(driver: ProcessDriver): void {
  const i = made.findIndex((m) => m.driver === driver);
  if (i === -1) return;
  rmSync(made[i]!.dir, { recursive: true, force: true });
  made.splice(i, 1);
}
