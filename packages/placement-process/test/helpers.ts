// Test helpers: a driver on a fresh state directory (removed afterwards), and the requirement that real
// bubblewrap is here — a missing bwrap fails the suite, never skips it.
import { type ChildProcess, execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { ProcessDriver } from '../src/process-driver.js';
import type { ProcessDriverConfigInput } from '../src/process-driver-config.js';
import { layout, listRecords } from '../src/sandbox-state.js';

export function requireBwrap(): string {
  const version = execFileSync('bwrap', ['--version'], { encoding: 'utf8' }).trim();
  const m = /bubblewrap (\d+)\.(\d+)/.exec(version);
  if (!m || Number(m[1]) * 100 + Number(m[2]) < 8)
    throw new Error(`bubblewrap ≥ 0.8 needed, found ${version}`);
  return version;
}

const made: Array<{ driver: ProcessDriver; dir: string }> = [];
const temps: string[] = [];

// Every test file leaves nothing behind: each driver's sandboxes are disposed (cgroups, workspaces, label
// files) and its directories removed once the file's tests are done.
afterAll(async () => {
  for (const { driver, dir } of made.splice(0)) {
    await disposeEverything(driver);
    rmSync(dir, { recursive: true, force: true });
  }
  for (const dir of temps.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Disposes every sandbox recorded in a driver's state directory. */
export async function disposeEverything(driver: ProcessDriver): Promise<void> {
  for (const record of await listRecords(layout(driver.config.stateDir))) await driver.dispose(record.handle);
  driver.drainReadyPool();
}

/** A fresh directory the sandbox user may pass through (0711), as a state directory's parents must be. */
export function tempDir(prefix = 'everdict-pd-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o711);
  temps.push(dir);
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

export async function removeDriverDirs(driver: ProcessDriver): Promise<void> {
  const i = made.findIndex((m) => m.driver === driver);
  if (i === -1) return;
  await disposeEverything(driver);
  rmSync(made[i]!.dir, { recursive: true, force: true });
  made.splice(i, 1);
}

/** The first line a child process (a holder of sandboxes in another process) prints; it must not exit first. */
export function firstLine(child: ChildProcess): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      if (buf.includes('\n')) resolve(buf.split('\n')[0]!);
    });
    child.on('exit', (code) => reject(new Error(`holder exited early (${code})`)));
  });
}

/** Every host process whose argv mentions `needle` (as any other host user reads it). */
export function hostArgvWith(needle: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8');
      if (cmd.includes(needle)) out.push(cmd.split('\0').join(' '));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/** A bubblewrap wrapper noting each start's arguments: `bwrap` for a driver's config, `starts()` the lines so far. */
export function countingBwrap(prefix: string): { bwrap: string; starts(): string[] } {
  const dir = tempDir(prefix);
  const log = join(dir, 'starts.log');
  writeFileSync(log, '', { mode: 0o666 });
  chmodSync(log, 0o666);
  const bwrap = join(dir, 'bwrap');
  writeFileSync(bwrap, `#!/bin/sh\necho "$*" >> ${log}\nexec bwrap "$@"\n`, { mode: 0o755 });
  return { bwrap, starts: () => readFileSync(log, 'utf8').split('\n').filter(Boolean) };
}
