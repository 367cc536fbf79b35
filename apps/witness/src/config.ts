// Configuration from flags, falling back to the environment:
//   --log URL[=LOGKEYHEX] (repeatable)   EVERDICT_WITNESS_LOGS        comma-separated, same form; the URL is
//                                        normalized (`normalizeLogUrl`): one log, however it is spelled
//   --key-file PATH                      EVERDICT_WITNESS_KEY_FILE    the witness's Ed25519 seed, 64 hex
//   --state-file PATH                    EVERDICT_WITNESS_STATE_FILE  default ./witness-state.json
//   --interval-ms N                      EVERDICT_WITNESS_INTERVAL_MS default 5000
//   --metrics-port N                     EVERDICT_WITNESS_METRICS_PORT default 9464 (0: any free port)
//   --metrics-host H                     EVERDICT_WITNESS_METRICS_HOST default 0.0.0.0
//   --once                               poll every log once, then exit
import { readFileSync, statSync } from 'node:fs';
import { type KeyPair, keyPairFromSeed, parseHash } from '@everdict/headlog';
import { z } from 'zod';
import { WitnessError } from './errors.js';
import { normalizeLogUrl } from './state.js';
import type { LogTarget } from './witness.js';

export interface WitnessConfig {
  readonly logs: LogTarget[];
  readonly keyFile: string;
  readonly stateFile: string;
  readonly intervalMs: number;
  readonly metricsPort: number;
  readonly metricsHost: string;
  readonly once: boolean;
}

const target = z.string().transform((s, ctx): LogTarget => {
  const m = /^(.*?)(?:=([0-9a-fA-F]{64}))?$/.exec(s.trim())!;
  const raw = m[1]!;
  let url: string | undefined;
  if (/^https?:\/\/[^\s]+$/i.test(raw) && !/[?#]/.test(raw) && !/^[a-z]+:\/\/[^/]*@/i.test(raw)) {
    try {
      url = normalizeLogUrl(raw);
    } catch {
      url = undefined;
    }
  }
  if (url === undefined) {
    ctx.addIssue(`--log ${s}: not an http(s) URL (no credentials, query or fragment)[=64 hex digits]`);
    return z.NEVER;
  }
  return m[2] ? { url, key: m[2].toLowerCase() } : { url };
});
/** One log given twice (however its URL is spelled) is polled once; with two different keys it is refused. */
const targets = z
  .array(target)
  .min(1, 'at least one --log')
  .transform((logs, ctx): LogTarget[] => {
    const byUrl = new Map<string, LogTarget>();
    for (const t of logs) {
      const prev = byUrl.get(t.url);
      if (prev?.key !== undefined && t.key !== undefined && prev.key !== t.key) {
        ctx.addIssue(`--log ${t.url} is given with two keys`);
        return z.NEVER;
      }
      if (prev === undefined || (prev.key === undefined && t.key !== undefined)) byUrl.set(t.url, t);
    }
    return [...byUrl.values()];
  });
const int = (min: number) => z.coerce.number().int().min(min);
const schema = z.object({
  logs: targets,
  keyFile: z.string().min(1, '--key-file (or EVERDICT_WITNESS_KEY_FILE) is required'),
  stateFile: z.string().min(1).default('witness-state.json'),
  intervalMs: int(10).default(5_000),
  metricsPort: int(0).max(65_535).default(9_464),
  metricsHost: z.string().min(1).default('0.0.0.0'),
  once: z.boolean().default(false),
});

const FLAGS: Record<string, keyof WitnessConfig> = {
  '--log': 'logs',
  '--key-file': 'keyFile',
  '--state-file': 'stateFile',
  '--interval-ms': 'intervalMs',
  '--metrics-port': 'metricsPort',
  '--metrics-host': 'metricsHost',
};

export function parseConfig(argv: readonly string[], env: NodeJS.ProcessEnv): WitnessConfig {
  const raw: Record<string, unknown> = {};
  const logs: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--once') {
      raw.once = true;
      continue;
    }
    const [flag, inline] =
      a.includes('=') && a.startsWith('--')
        ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]
        : [a, undefined];
    const field = FLAGS[flag!];
    const value = inline ?? argv[++i];
    if (!field || value === undefined) throw new WitnessError('BadConfig', `unexpected argument ${a}`);
    if (field === 'logs') logs.push(value);
    else raw[field] = value;
  }
  if (logs.length === 0 && env.EVERDICT_WITNESS_LOGS)
    logs.push(...env.EVERDICT_WITNESS_LOGS.split(',').filter((s) => s.trim()));
  raw.logs = logs;
  raw.keyFile ??= env.EVERDICT_WITNESS_KEY_FILE ?? '';
  raw.stateFile ??= env.EVERDICT_WITNESS_STATE_FILE;
  raw.intervalMs ??= env.EVERDICT_WITNESS_INTERVAL_MS;
  raw.metricsPort ??= env.EVERDICT_WITNESS_METRICS_PORT;
  raw.metricsHost ??= env.EVERDICT_WITNESS_METRICS_HOST;
  const r = schema.safeParse(raw);
  if (!r.success) throw new WitnessError('BadConfig', r.error.issues.map((i) => i.message).join('; '));
  return r.data;
}

/**
 * Permission bits a witness key file must not have: any access by others, or write by the group. Group read
 * stays allowed: a Kubernetes Secret mounted with `defaultMode: 0400` under a pod `fsGroup` is 0440.
 */
const KEY_FILE_FORBIDDEN_MODE = 0o027;

/**
 * The witness key: a file holding the 32-byte Ed25519 seed as 64 hex digits (whitespace ignored), that others
 * cannot read nor the group write (`BadConfig` otherwise: anyone who reads the seed can cosign as this witness).
 */
export function readWitnessKey(path: string): KeyPair {
  let text: string;
  try {
    const mode = statSync(path).mode & 0o777;
    if ((mode & KEY_FILE_FORBIDDEN_MODE) !== 0)
      throw new WitnessError(
        'BadConfig',
        `the key file ${path} has mode ${mode.toString(8).padStart(4, '0')}: others may read or the group may write it (chmod 600 it)`,
      );
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if (e instanceof WitnessError) throw e;
    throw new WitnessError('BadConfig', `cannot read the key file ${path}: ${(e as Error).message}`);
  }
  const seed = parseHash(text.trim().toLowerCase());
  if (!seed) throw new WitnessError('BadConfig', `${path} does not hold a 64-hex-digit Ed25519 seed`);
  return keyPairFromSeed(seed);
}
