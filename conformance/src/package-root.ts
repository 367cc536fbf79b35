// The conformance package's own directory, found from this module whether it runs from src/ or dist/,
// so nothing depends on the caller's working directory.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).name === '@everdict/conformance')
      return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find the @everdict/conformance package directory');
    dir = up;
  }
}

export function defaultVectorsDir(): string {
  return join(packageRoot(), 'vectors');
}

/** Our implementation's CLI, found through the workspace devDependency (else the sibling package). */
export function defaultImplCli(): string {
  const viaDependency = join(packageRoot(), 'node_modules', '@everdict', 'runrecord', 'dist', 'cli.js');
  return existsSync(viaDependency)
    ? viaDependency
    : join(packageRoot(), '..', 'packages', 'runrecord', 'dist', 'cli.js');
}
