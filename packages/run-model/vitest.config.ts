// Relative import: vite's config bundler leaves the `@everdict/tooling` specifier external, and Node 20
// cannot load the .ts file it points at (ERR_UNKNOWN_FILE_EXTENSION); a relative path gets bundled.
import { packageTestConfig } from '../../tooling/vitest.shared.js';

export default packageTestConfig();
