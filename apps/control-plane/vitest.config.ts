// Relative import: through the workspace symlink the shared .ts preset is left external by vite's config
// bundler, and Node 20 cannot load a .ts file; a relative path gets bundled.
import { packageTestConfig } from '../../tooling/vitest.shared.js';

export default packageTestConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    // Files share their worker's module graph (each file still builds its own cores and databases): importing
    // the control plane's ≈ 200 modules took ≈ 7 s per file on this machine, 63 times over.
    isolate: false,
    // On PGlite, two workers (vitest's default on 2 cores is one): this package is the longest of `pnpm test`, and
    // for its last minutes it ran alone on one core of two. Against a live PostgreSQL (CI's second pass) one: a run
    // on two there failed once, for a reason not yet known (README, Tests).
    maxWorkers: process.env.EVERDICT_TEST_DATABASE_URL?.trim() ? 1 : 2,
  },
});
