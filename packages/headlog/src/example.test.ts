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
      'run-1: 3 leaves in tree 4, served record ok',
      'cut short: TruncatedRecord',
      'tree 4 -> 5: consistent, 1 proof hashes',
    ]);
  });

  it('is shown verbatim in the README', () => {
    const readme = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    expect(readme).toContain(`\`\`\`js\n${readFileSync(example, 'utf8')}\`\`\``);
  });
});
