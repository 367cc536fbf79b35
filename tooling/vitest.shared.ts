// Shared vitest settings: every package writes a JSON report that tooling/scripts/run-tests.mjs sums up.
import { defineConfig, mergeConfig, type ViteUserConfig } from 'vitest/config';

export function packageTestConfig(overrides: ViteUserConfig = {}): ViteUserConfig {
  return mergeConfig(
    defineConfig({
      test: {
        include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
        reporters: ['default', ['json', { outputFile: '.test-results/vitest.json' }]],
        testTimeout: 30_000,
        hookTimeout: 60_000,
      },
    }),
    overrides,
  );
}
