import { defineConfig } from 'tsup';

// The library. The CLI is built after it by tsup.cli.config.ts (`pnpm build` runs both, in this order).
export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
});
