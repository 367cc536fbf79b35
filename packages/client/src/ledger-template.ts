// A migrated, empty PGlite ledger kept once per built control plane, copied into a test control plane's
// fresh data directory before it starts. A PGlite's first start (initdb, WebAssembly compile) and the
// migrations cost a control plane 20–80 s on a loaded 2-core machine; a copied directory opens in a few
// seconds, and the control plane finds every migration applied. Every process (vitest workers, parallel
// packages under turbo) shares one template: the first makes it under a lock directory, the others wait.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** The environment variable that turns the template off (`0`): every control plane then migrates its own. */
export const LEDGER_TEMPLATE_ENV = 'EVERDICT_TEST_LEDGER_TEMPLATE';

/** Copies the migrated template into `<dataDir>/pglite` (made once per built control plane at `mainPath`). */
export async function seedLedger(mainPath: string, dataDir: string, timeoutMs: number): Promise<void> {
  const template = await ledgerTemplate(mainPath, timeoutMs);
  cpSync(template, join(dataDir, 'pglite'), { recursive: true });
}

/** The template's directory, keyed by the built control plane (its migrations) and its PGlite. */
function templatePath(mainPath: string): string {
  const distDir = dirname(mainPath);
  const hash = createHash('sha256');
  for (const f of readdirSync(distDir).sort()) {
    if (f.endsWith('.js')) hash.update(f).update(readFileSync(join(distDir, f)));
  }
  hash.update(createRequire(mainPath).resolve('@electric-sql/pglite'));
  return join(tmpdir(), `everdict-ledger-template-${hash.digest('hex').slice(0, 16)}`);
}

async function ledgerTemplate(mainPath: string, timeoutMs: number): Promise<string> {
  const template = templatePath(mainPath);
  const lock = `${template}.lock`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (existsSync(template)) return template;
    if (tryLock(lock)) {
      try {
        if (!existsSync(template)) await buildTemplate(mainPath, template);
        return template;
      } finally {
        rmSync(lock, { recursive: true, force: true });
      }
    }
    if (Date.now() > deadline) throw new Error(`no migrated ledger template at ${template} in time`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Takes the lock directory; a lock whose holder has died is taken over. */
function tryLock(lock: string): boolean {
  try {
    mkdirSync(lock);
  } catch {
    const holder = Number(readFileSafe(join(lock, 'pid')));
    if (!Number.isInteger(holder) || holder <= 0 || isAlive(holder)) return false;
    rmSync(lock, { recursive: true, force: true });
    return false; // the next round takes it
  }
  writeFileSync(join(lock, 'pid'), String(process.pid));
  return true;
}

function readFileSafe(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Migrates a fresh PGlite in a child process (the control plane's own `openDatabase`), closes it cleanly. */
async function buildTemplate(mainPath: string, template: string): Promise<void> {
  const work = `${template}.tmp-${process.pid}`;
  rmSync(work, { recursive: true, force: true });
  const index = join(dirname(mainPath), 'index.js');
  const script = `const { openDatabase } = await import(${JSON.stringify(index)});
const db = await openDatabase({ dataDir: ${JSON.stringify(work)} });
await db.close();`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr?.on('data', (c: Buffer) => {
    err += c.toString('utf8');
  });
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  if (code !== 0) {
    rmSync(work, { recursive: true, force: true });
    throw new Error(`migrating the ledger template failed (${code}):\n${err.slice(-4000)}`);
  }
  renameSync(work, template);
}
