// The main job's seeded credentials: the admin key of tenant `default` and the internal service token,
// generated on a first start and kept in `<dataDir>/main-job.json` (mode 0600) so a restart on the same
// data keeps working keys. EVERDICT_BOOTSTRAP_API_KEY / EVERDICT_INTERNAL_TOKEN override them. A file that
// exists but is not JSON of that shape is refused (usage, exit 2) and never overwritten: the data the stack
// already holds uses the key in it.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { makeDirectories } from '../directories.js';
import { CliError } from '../errors.js';

const Stored = z.object({
  apiKey: z.string().min(16),
  internalToken: z.string().min(16),
  /** Written by `recordUrl` once the stack is up. */
  url: z.string().optional(),
});
export type StackSecrets = Pick<z.infer<typeof Stored>, 'apiKey' | 'internalToken'>;

export const SECRETS_FILE = 'main-job.json';

/** The stored secrets, or undefined when there is no file; a file that is not them is a usage error. */
function readStored(file: string): z.infer<typeof Stored> | undefined {
  if (!existsSync(file)) return undefined;
  const refuse = (why: string) =>
    new CliError(
      'usage',
      `${file} ${why}: it holds the admin key and service token of the data in ${path.dirname(file)}, so it is not replaced. Restore it (apiKey, internalToken: strings of 16+ characters), or move it away to start with new keys (the data stored under the old ones then needs EVERDICT_BOOTSTRAP_API_KEY / EVERDICT_INTERNAL_TOKEN set to them).`,
    );
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw refuse(`cannot be read (${(e as Error).message})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw refuse('is not JSON');
  }
  const parsed = Stored.safeParse(json);
  if (!parsed.success)
    throw refuse(
      `is not the main job's secrets (${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')})`,
    );
  return parsed.data;
}

/**
 * The file holds the admin key: readable by its owner only. A kept file with a wider mode (restored with
 * `cp`, unpacked from an archive) is narrowed to 0600 — `writeFileSync`'s `mode` applies only to a new file.
 */
function ownerOnly(file: string): void {
  try {
    if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  } catch {
    /* not ours to change (another owner): left as it is */
  }
}

export function loadOrCreateSecrets(
  dataDir: string,
  env: NodeJS.ProcessEnv,
): StackSecrets & { created: boolean } {
  const file = path.join(dataDir, SECRETS_FILE);
  const found = readStored(file);
  const created = found === undefined;
  const stored: StackSecrets = found ?? {
    // The control plane's shape of a minted key (`evk_` + 32 random bytes, base64url: its auth/secrets.ts).
    apiKey: `evk_${randomBytes(32).toString('base64url')}`,
    internalToken: `int_${randomBytes(24).toString('base64url')}`,
  };
  if (created) {
    makeDirectories(dataDir);
    // `wx`: never over a file that appeared meanwhile.
    writeFileSync(file, `${JSON.stringify(stored, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  } else ownerOnly(file);
  return {
    apiKey: env.EVERDICT_BOOTSTRAP_API_KEY ?? stored.apiKey,
    internalToken: env.EVERDICT_INTERNAL_TOKEN ?? stored.internalToken,
    created,
  };
}

/** What `everdict demo` and other commands read when no URL/key is given: the running main job's. */
export function readStackFile(dataDir: string): { url?: string; apiKey?: string; internalToken?: string } {
  const file = path.join(dataDir, SECRETS_FILE);
  if (!existsSync(file)) return {};
  try {
    const v = JSON.parse(readFileSync(file, 'utf8')) as {
      url?: string;
      apiKey?: string;
      internalToken?: string;
    };
    return {
      ...(v.url ? { url: v.url } : {}),
      ...(v.apiKey ? { apiKey: v.apiKey } : {}),
      ...(v.internalToken ? { internalToken: v.internalToken } : {}),
    };
  } catch {
    return {};
  }
}

export function recordUrl(dataDir: string, url: string): void {
  const file = path.join(dataDir, SECRETS_FILE);
  const v = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  writeFileSync(file, `${JSON.stringify({ ...v, url }, null, 2)}\n`, { mode: 0o600 });
  ownerOnly(file);
}
