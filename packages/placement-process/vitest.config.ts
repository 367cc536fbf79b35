// Imported by relative path: through the workspace symlink (@everdict/tooling/vitest) the shared .ts file is
// treated as an external package and Node 20 cannot load it when vitest bundles this config.
import { packageTestConfig } from '../../tooling/vitest.shared.js';

// Two files at once: vitest's default on a 2-core machine is one worker (cores − 1), and these files mostly
// wait on real processes (bubblewrap starts, exits, timeouts): one worker used about a quarter of the machine
// (75 s of CPU in a 300 s run). Every file has its own state directories and sandboxes (test/helpers.ts).
export default packageTestConfig({ test: { maxWorkers: 2 } });
