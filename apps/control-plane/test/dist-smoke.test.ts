// The CI smoke step, inside `pnpm test` (turbo builds the package before its tests): the BUILT server
// (dist/main.js, as `pnpm start` runs it) answers every operation of its OpenAPI document without a 5xx.
// Without a build this fails — it never skips.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const script = fileURLToPath(new URL('../scripts/smoke-openapi.mjs', import.meta.url));

describe('the built control plane (dist/main.js)', () => {
  it('serves its OpenAPI document and answers every route in it without a 5xx', () => {
    const run = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 280_000 });
    const output = `${run.stdout}\n${run.stderr}`;
    expect(run.status, output).toBe(0);
    const line = /^SMOKE (.+)$/m.exec(run.stdout)?.[1];
    expect(line, output).toBeDefined();
    const summary = JSON.parse(line!) as {
      requests: number;
      statuses: Record<string, number>;
      failures: number;
    };
    expect(summary.failures).toBe(0);
    expect(summary.statuses['200']).toBeGreaterThan(0);
    expect(summary.requests).toBeGreaterThanOrEqual(100);
    expect(Object.keys(summary.statuses).filter((s) => Number(s) >= 500)).toEqual([]);
  }, 300_000);
});
