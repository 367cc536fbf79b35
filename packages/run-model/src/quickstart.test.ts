import { describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain ESM example without type declarations; it imports the built package.
import { main } from '../examples/quickstart.mjs';

describe('examples/quickstart.mjs (the README example)', () => {
  it('runs end to end', () => {
    expect(main()).toEqual({
      facts: ['run.started', 'run.settled'],
      health: 'settled',
      secondSettle: 'already_terminal',
      group: { kind: 'scorecard', status: 'failed' },
      passRates: ['exit_code=0', 'output_contains=1'],
      trigger: { allowed: true },
    });
  });
});

describe('README', () => {
  it('shows the example exactly as examples/quickstart.mjs has it', async () => {
    const { readFile } = await import('node:fs/promises');
    const read = (p: string) => readFile(new URL(p, import.meta.url), 'utf8');
    const [readme, example] = await Promise.all([read('../README.md'), read('../examples/quickstart.mjs')]);
    const block = readme.match(/```js\n([\s\S]*?)```/)?.[1];
    expect(block).toBe(example);
  });
});
