// Relative import: through the workspace symlink (@everdict/tooling/vitest) the shared .ts file is treated
// as an external package, and Node 20 cannot load it when vitest bundles this config.
import { packageTestConfig } from '../tooling/vitest.shared.js';

// The command-line tests run the built CLIs, so the global setup builds dist/ once first.
export default packageTestConfig({ test: { globalSetup: ['test/global-setup.ts'] } });
