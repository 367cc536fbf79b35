import { defineConfig } from 'tsup';

// The bin (dist/cli.js), built after the library into the same dist/ (so no `clean`). Loading zod, @noble/*
// and hash-wasm as ≈ 120 separate modules was most of each start's CPU (README, "Command line"), so the
// CLI bundles them:
// - zod tree-shakes only through `import * as z from 'zod'` (the form every source file uses; `{ z }`
//   bundles all of it, every locale included);
// - `module` first: hash-wasm's ES build, so only its BLAKE3 is bundled (its `main` is all 30 algorithms);
// - @everdict/headlog is bundled too (only the log commands and `verify --log` import it, lazily, so it
//   lands in their chunks): it imports zod as `* as z` as well, so the log commands share the CLI's one
//   tree-shaken zod instead of loading the whole package from node_modules beside it.
export default defineConfig({
  entry: ['src/cli.ts'],
  format: ['esm'],
  clean: false,
  sourcemap: true,
  target: 'node20',
  noExternal: ['zod', /^@noble\//, 'hash-wasm', '@everdict/headlog'],
  esbuildOptions(options) {
    options.mainFields = ['module', 'main'];
  },
});
