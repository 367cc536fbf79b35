// The local backend never loads the AWS SDK: a child process imports the built package, appends, seals and
// reads on a directory, and a module-resolution hook reports every @aws-sdk module resolved (none). The same
// child then builds an S3 backend from the environment — still none until its first call.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const dist = fileURLToPath(new URL('../../dist/index.js', import.meta.url));

describe('the AWS SDK loads lazily', () => {
  it('is never imported by a process on the local backend', () => {
    expect(existsSync(dist), `${dist} is missing: build first (turbo's test task does)`).toBe(true);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'lazy-s3-'));
    try {
      const hooks = path.join(dir, 'hooks.mjs');
      writeFileSync(
        hooks,
        `export async function resolve(spec, ctx, next) {
  if (spec.startsWith('@aws-sdk/')) process.stderr.write('AWS:' + spec + '\\n');
  return next(spec, ctx);
}\n`,
      );
      const main = path.join(dir, 'main.mjs');
      writeFileSync(
        main,
        `import { register } from 'node:module';
register(${JSON.stringify(pathToFileURL(hooks).href)});
const { TrajectoryStore, backendFromEnv } = await import(${JSON.stringify(pathToFileURL(dist).href)});
const store = new TrajectoryStore({ backend: backendFromEnv({}, { dataDir: ${JSON.stringify(dir)} }) });
const ts = '2026-12-01T10:00:00.000Z';
await store.append('t', 'r', [{ type: 'log', seq: 1, ts, runId: 'r', level: 'info', message: 'hi' }]);
const { ref } = await store.seal('t', 'r');
const page = await store.read('t', 'r', { offset: 0, limit: 10 });
const s3 = backendFromEnv({ EVERDICT_S3_BUCKET: 'bucket', EVERDICT_S3_ENDPOINT: 'http://127.0.0.1:9' });
console.log(JSON.stringify({ digest: ref.digest, items: page.items.length, s3: s3.kind }));
await store.close();
await s3.close();
`,
      );
      const out = spawnSync(process.execPath, [main], { encoding: 'utf8' });
      expect(out.status, out.stderr).toBe(0);
      expect(JSON.parse(out.stdout.trim())).toMatchObject({ items: 1, s3: 's3' });
      expect(out.stderr).not.toContain('AWS:');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
