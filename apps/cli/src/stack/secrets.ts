// The main job's seeded credentials: the admin key of tenant `default` and the internal service token,
// generated on a first start and kept in `<dataDir>/main-job.json` (mode 0600) so a restart on the same
// data keeps working keys. EVERDICT_BOOTSTRAP_API_KEY / EVERDICT_INTERNAL_TOKEN override them.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

const Stored = z.object({ apiKey: z.string().min(16), internalToken: z.string().min(16) });
export type StackSecrets = z.infer<typeof Stored>;

export const SECRETS_FILE = 'main-job.json';

export function loadOrCreateSecrets(
  dataDir: string,
  env: NodeJS.ProcessEnv,
): StackSecrets & { created: boolean } {
  const file = path.join(dataDir, SECRETS_FILE);
  let stored: StackSecrets | undefined;
  if (existsSync(file)) {
    const parsed = Stored.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    if (parsed.success) stored = parsed.data;
  }
  const created = stored === undefined;
  stored ??= {
    apiKey: `evd_${randomBytes(24).toString('base64url')}`,
    internalToken: `int_${randomBytes(24).toString('base64url')}`,
  };
  if (created) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, `${JSON.stringify(stored, null, 2)}\n`, { mode: 0o600 });
  }
  return {
    apiKey: env.EVERDICT_BOOTSTRAP_API_KEY ?? stored.apiKey,
    internalToken: env.EVERDICT_INTERNAL_TOKEN ?? stored.internalToken,
    created,
  };
}

/** What `everdict demo` and other commands read when no URL/key is given: the running main job's. */
export function readStackFile(dataDir: string): { url?: string; apiKey?: string } {
  const file = path.join(dataDir, SECRETS_FILE);
  if (!existsSync(file)) return {};
  try {
    const v = JSON.parse(readFileSync(file, 'utf8')) as { url?: string; apiKey?: string };
    return { ...(v.url ? { url: v.url } : {}), ...(v.apiKey ? { apiKey: v.apiKey } : {}) };
  } catch {
    return {};
  }
}

export function recordUrl(dataDir: string, url: string): void {
  const file = path.join(dataDir, SECRETS_FILE);
  const v = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  writeFileSync(file, `${JSON.stringify({ ...v, url }, null, 2)}\n`, { mode: 0o600 });
}
