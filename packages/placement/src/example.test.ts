import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const example = fileURLToPath(new URL('../examples/quickstart.mjs', import.meta.url));
const dist = fileURLToPath(new URL('../dist/index.js', import.meta.url));

describe('README example', () => {
  it('runs and prints what the README says', () => {
    expect(existsSync(dist), `${dist} is missing: build first (turbo's test task does)`).toBe(true);
    const out = spawnSync(process.execPath, [example], { encoding: 'utf8' });
    expect(out.stderr).toBe('');
    expect(out.stdout.trim().split('\n')).toEqual([
      '0 hello world',
      'process {"where":"runtime","isolation":"container","target":"cluster-eu"}',
    ]);
  });

  it('is shown in the README verbatim', () => {
    const readme = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    expect(readme).toContain(`\`\`\`js\n${readFileSync(example, 'utf8')}\`\`\``);
  });
});
