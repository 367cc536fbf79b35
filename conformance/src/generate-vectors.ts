// `pnpm --filter @everdict/conformance run vectors`: (re)writes conformance/vectors/ from the cases.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { generateVectorFiles } from './cases/vector-files.js';
import { defaultVectorsDir } from './package-root.js';
import { CLASSES } from './vectors/schema.js';

const dir = defaultVectorsDir();
const files = generateVectorFiles();
for (const cls of CLASSES) rmSync(join(dir, cls.toLowerCase()), { recursive: true, force: true });
for (const [path, text] of files) {
  mkdirSync(dirname(join(dir, path)), { recursive: true });
  writeFileSync(join(dir, path), text);
}
console.log(`wrote ${files.size} files to ${dir}`);
