// Relative import: through the workspace symlink the shared .ts preset is left external by vite's config
// bundler, and Node 20 cannot load a .ts file; a relative path gets bundled.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { configDefaults } from 'vitest/config';
import { packageTestConfig } from '../../tooling/vitest.shared.js';

/**
 * The files that fake timers (`vi.useFakeTimers`), found by reading them: in a worker shared with other files they
 * are unsafe both ways. Another file's leftover work sets a timer while the clock is fake (`vi.getTimerCount()`
 * counted it: a flake, 1 run in 3), and a patched global outlives the file (a spy on `setTimeout` hung the next
 * file for 120 s). They run isolated, each in a worker of its own; they build no core, so isolation costs little.
 */
const here = fileURLToPath(new URL('.', import.meta.url));
const testFiles = (dir: string) =>
  readdirSync(join(here, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => join(dir, f));
const fakeTimerFiles = [...testFiles('src'), ...testFiles('test')]
  .filter((f) => readFileSync(join(here, f), 'utf8').includes('useFakeTimers'))
  .sort();

const preset = packageTestConfig();

export default packageTestConfig({
  test: {
    // On PGlite, two workers (vitest's default on 2 cores is one): this package is the longest of `pnpm test`, and
    // for its last minutes it ran alone on one core of two. Against a live PostgreSQL (CI's second pass) one: a run
    // on two there failed once, for a reason not yet known (README, Tests).
    maxWorkers: process.env.EVERDICT_TEST_DATABASE_URL?.trim() ? 1 : 2,
    projects: [
      {
        extends: true,
        test: {
          name: 'shared-worker',
          globalSetup: ['test/global-setup.ts'],
          // Files share their worker's module graph (each file still builds its own cores and databases):
          // importing the control plane's ≈ 200 modules took ≈ 7 s per file on this machine, 63 times over.
          isolate: false,
          exclude: [...configDefaults.exclude, ...fakeTimerFiles],
        },
      },
      // Not `extends: true`: the shared preset's `include` would be merged in (arrays concatenate), not replaced.
      {
        test: {
          name: 'fake-timers',
          include: fakeTimerFiles,
          isolate: true,
          testTimeout: preset.test?.testTimeout,
          hookTimeout: preset.test?.hookTimeout,
        },
      },
    ],
  },
});
