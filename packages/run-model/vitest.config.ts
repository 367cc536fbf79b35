// Relative import: vite's config bundler leaves the `@everdict/tooling` specifier external, and Node 20
// cannot load the .ts file it points at (ERR_UNKNOWN_FILE_EXTENSION); a relative path gets bundled.
import { packageTestConfig } from '../../tooling/vitest.shared.js';

// isolate: false — the test files run one after another in one worker that keeps its module cache, instead
// of a fresh fork per file that imports vitest, the sources and their dependencies again. A file that changes
// process state puts it back before it ends.
export default packageTestConfig({ test: { isolate: false } });
