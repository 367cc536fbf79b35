// Relative import: through the workspace symlink the shared .ts preset is left external by vite's config
// bundler, and Node 20 cannot load a .ts file; a relative path gets bundled.
import { availableParallelism } from 'node:os';
import { packageTestConfig } from '../../tooling/vitest.shared.js';

export default packageTestConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    // Files share their worker's module graph (each file still builds its own cores and databases): importing
    // the control plane's ≈ 200 modules took ≈ 7 s per file on this machine, 63 times over.
    isolate: false,
    // At least two workers (vitest's default is cores − 1, one on a 2-core machine): this package is the
    // suite's critical path, and under `pnpm test` the packages beside it run in the background
    // (tooling/vitest.shared.ts), so a second worker takes CPU they would otherwise have used.
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
