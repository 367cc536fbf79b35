// Relative import: through the workspace symlink the shared .ts preset is left external by vite's config
// bundler, and Node 20 cannot load a .ts file; a relative path gets bundled.
import { packageTestConfig } from '../../tooling/vitest.shared.js';

export default packageTestConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    // Files share their worker's module graph (each file still builds its own cores and databases): importing
    // the control plane's ≈ 200 modules took ≈ 7 s per file on this machine, 63 times over.
    isolate: false,
    // On PGlite, two files at once: vitest's default on a 2-core machine is one worker (cores − 1), and this
    // suite, the longest, then ran alone on one core for its last minutes in CI (849 s of a 1,044 s test
    // stage); each file's databases are its own. Against a live PostgreSQL, one: the databases are separate but
    // the cluster's snapshots are shared — another file's open transaction holds back the outbox's visibility
    // horizon, and a test that drains the outbox once then sees nothing (subscription-revoke.test.ts did).
    maxWorkers: process.env.EVERDICT_TEST_DATABASE_URL?.trim() ? 1 : 2,
  },
});
