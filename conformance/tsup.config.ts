import { defineConfig, type Options } from 'tsup';

export const tsupOptions: Options = {
  entry: ['src/cli.ts', 'src/generate-vectors.ts', 'src/reference-cli.ts'],
  format: ['esm'],
  dts: false,
  clean: true,
  sourcemap: true,
  target: 'node20',
};

export default defineConfig(tsupOptions);
