// Shared vitest settings: every package writes a JSON report that tooling/scripts/run-tests.mjs sums up.
import { defineConfig, mergeConfig, type ViteUserConfig } from 'vitest/config';

export function packageTestConfig(overrides: ViteUserConfig = {}): ViteUserConfig {
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
