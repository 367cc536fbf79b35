// Imported by relative path: through the workspace symlink (@everdict/tooling/vitest) the shared .ts file is
// treated as an external package and Node 20 cannot load it when vitest bundles this config.
import { packageTestConfig } from '../../tooling/vitest.shared.js';

export default packageTestConfig();
