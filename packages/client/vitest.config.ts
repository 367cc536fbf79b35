// Relative import: vite's config bundler leaves the `@everdict/tooling` specifier external, and Node 20
// cannot load the .ts file it points at (ERR_UNKNOWN_FILE_EXTENSION); a relative path gets bundled.
import { packageTestConfig } from '../../tooling/vitest.shared.js';

// A real control plane starts per test file (PGlite's first start is slow on a loaded machine).
export default packageTestConfig({ test: { hookTimeout: 300_000 } });
