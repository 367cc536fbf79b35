import { defineConfig } from 'tsup';

// The bin (dist/cli.js), built after the library into the same dist/ (so no `clean`). Loading zod, @noble/*
// and hash-wasm as ≈ 120 separate modules was most of each start's CPU (README, "Command line"), so the
// CLI bundles them:
// - zod tree-shakes only through `import * as z from 'zod'` (the form every source file uses; `{ z }`
//   bundles all of it, every locale included);
// - `module` first: hash-wasm's ES build, so only its BLAKE3 is bundled (its `main` is all 30 algorithms);
// - @everdict/headlog stays external (loaded only by the log commands): its `{ z }` import would put all of
//   zod back on `verify`'s path.
export default defineConfig({
  entry: ['src/cli.ts'],
  format: ['esm'],
  clean: false,
  sourcemap: true,
  target: 'node20',
  noExternal: ['zod', /^@noble\//, 'hash-wasm'],
  esbuildOptions(options) {
    options.mainFields = ['module', 'main'];
  },
});
