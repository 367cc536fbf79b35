// The main job's parts: where each program lives in this workspace (overridable), and the environment it
// gets. Production backing is switched by the environment alone: DATABASE_URL (PostgreSQL instead of
// PGlite), EVERDICT_S3_BUCKET (+ _ENDPOINT, _REGION: S3 trajectories instead of a local directory),
// EVERDICT_RUNNER=external (no embedded runner: pair an `everdict-runner` instead), EVERDICT_MODEL_BASE_URL
// (the agent's OpenAI-compatible model instead of the scripted one).
import { fileURLToPath } from 'node:url';

const here = (rel: string) => fileURLToPath(new URL(rel, import.meta.url));

export interface PartPaths {
  readonly controlPlane: string;
  readonly agent: string;
}

/** From `apps/cli/dist/main.js` (or `apps/cli/src/stack/*.ts` under vitest) to its siblings' dist. */
export function defaultPaths(env: NodeJS.ProcessEnv): PartPaths {
  const fromDist = import.meta.url.includes('/dist/');
  const root = fromDist ? '../../' : '../../../';
  return {
    controlPlane: env.EVERDICT_CONTROL_PLANE_MAIN ?? here(`${root}control-plane/dist/main.js`),
    agent: env.EVERDICT_AGENT_MAIN ?? here(`${root}agent/dist/cli.js`),
  };
}

/** Variables the parts read that the main job passes through unchanged. */
export const PASS_THROUGH = [
  'PATH',
  'HOME',
  'LANG',
  'TZ',
  'NODE_OPTIONS',
  'DATABASE_URL',
  'EVERDICT_S3_BUCKET',
  'EVERDICT_S3_ENDPOINT',
  'EVERDICT_S3_REGION',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'EVERDICT_MODEL_BASE_URL',
  'EVERDICT_MODEL_API_KEY',
  'EVERDICT_JUDGE',
  'EVERDICT_LEASE_MS',
  'LOG_LEVEL',
] as const;

export function passThrough(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of PASS_THROUGH) {
    const v = env[k];
    if (v !== undefined) out[k] = v;
  }
  return out;
}
