// Shared vitest settings: every package writes a JSON report that tooling/scripts/run-tests.mjs sums up.
import { setPriority } from 'node:os';
import { defineConfig, mergeConfig, type ViteUserConfig } from 'vitest/config';

/**
 * `background`: under `pnpm test` (tooling/scripts/run-tests.mjs sets EVERDICT_TEST_NICE) this package's vitest,
 * its workers and every process its tests start run at that nice value, so the kernel serves the suite's
 * critical path first — the build chain the control plane's tests wait for, then the control plane's files —
 * and the suites whose tests hold real leases and heartbeats or short exec deadlines (runner, agent, cli, client,
 * placement-process), which stay in the foreground with the control plane.
 */
export interface PackageTestOptions {
  readonly background?: boolean;
}

export function packageTestConfig(
  overrides: ViteUserConfig = {},
  options: PackageTestOptions = {},
): ViteUserConfig {
  const nice = Number(process.env.EVERDICT_TEST_NICE ?? '0');
  if (options.background && Number.isInteger(nice) && nice > 0) {
    try {
      setPriority(nice); // this process (vitest's main); the workers it forks and their children inherit it
    } catch {
      // a lower priority is always allowed; if not, the package simply runs in the foreground
    }
  }
  return mergeConfig(
    defineConfig({
      test: {
        include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
        reporters: ['default', ['json', { outputFile: '.test-results/vitest.json' }]],
        testTimeout: 300_000, // a safety net against hangs, not a speed limit: a loaded 2-core machine must not fail a test
        hookTimeout: 300_000,
      },
    }),
    overrides,
  );
}
