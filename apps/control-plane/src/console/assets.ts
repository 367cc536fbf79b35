// The console's files: its own page, script and stylesheet (src/console/static, shipped as they are: no
// build step), and xterm.js served straight from node_modules (@xterm/xterm, @xterm/addon-fit — installed
// with the control plane, so "vendored at install"). Read once, kept in memory.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Asset {
  readonly body: Uint8Array;
  readonly type: string;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/** `src/console/static` from this module under vitest (src/console) or in the bundle (dist/). */
function staticDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [path.join(here, 'static'), path.join(here, '..', 'src', 'console', 'static')];
  const found = candidates.find((d) => existsSync(path.join(d, 'index.html')));
  if (!found) throw new Error(`console files not found (looked in ${candidates.join(', ')})`);
  return found;
}

function vendorFile(pkg: string, rel: string): string {
  const require = createRequire(import.meta.url);
  return path.join(path.dirname(require.resolve(`${pkg}/package.json`)), rel);
}

/** Public name → file. Nothing outside this table is served. */
function table(): Record<string, string> {
  const dir = staticDir();
  return {
    'index.html': path.join(dir, 'index.html'),
    'console.js': path.join(dir, 'console.js'),
    'console.css': path.join(dir, 'console.css'),
    'views.js': path.join(dir, 'views.js'),
    'live.js': path.join(dir, 'live.js'),
    'terminal.js': path.join(dir, 'terminal.js'),
    'detail.js': path.join(dir, 'detail.js'),
    'new-run.js': path.join(dir, 'new-run.js'),
    'rows.js': path.join(dir, 'rows.js'),
    'xterm.mjs': vendorFile('@xterm/xterm', 'lib/xterm.mjs'),
    'xterm.css': vendorFile('@xterm/xterm', 'css/xterm.css'),
    'addon-fit.mjs': vendorFile('@xterm/addon-fit', 'lib/addon-fit.mjs'),
  };
}

let cache: Map<string, Asset> | undefined;

export function asset(name: string): Asset | undefined {
  if (!cache) {
    cache = new Map();
    for (const [k, file] of Object.entries(table())) {
      if (!existsSync(file)) continue;
      cache.set(k, {
        body: readFileSync(file),
        type: TYPES[path.extname(file)] ?? 'application/octet-stream',
      });
    }
  }
  return cache.get(name);
}
