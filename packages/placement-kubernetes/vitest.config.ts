// Imported by relative path: through the workspace symlink (@everdict/tooling/vitest) the shared .ts file is
// treated as an external package and Node 20 cannot load it when vitest bundles this config.
import { packageTestConfig } from '../../tooling/vitest.shared.js';

// isolate: false — the test files run one after another in one worker that keeps its module cache, instead
// of a fresh fork per file that imports vitest, the sources and their dependencies again. A file that changes
// process state puts it back before it ends.
export default packageTestConfig({ test: { isolate: false } });
