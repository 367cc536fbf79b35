// Relative import: through the workspace symlink the shared .ts preset is left external by vite's config
// bundler, and Node 20 cannot load a .ts file; a relative path gets bundled.
import { packageTestConfig } from '../../tooling/vitest.shared.js';

export default packageTestConfig({ test: { globalSetup: ['test/global-setup.ts'] } });
