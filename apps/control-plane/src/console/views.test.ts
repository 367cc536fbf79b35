// The console's pure rendering (static/views.js, plain ES modules the page loads as they are), in Node.
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module of the page, without types
import { ARTIFACTS_LISTED, artifactsView } from './static/views.js';

const artifact = (i: number) => ({
  name: `out/f${i}.txt`,
  bytes: i,
  uri: `artifact:blake3:${i}`,
  digest: `blake3:${i}`,
});

describe("a run's artifacts in its detail", () => {
  it('one file: its row, no archive button', () => {
    const html = artifactsView([artifact(1)]) as string;
    expect(html).toContain('data-artifact="out/f1.txt"');
    expect(html).not.toContain('data-archive');
  });

  it('many: the first ARTIFACTS_LISTED rows, how many more, and all of them as one archive', () => {
    const html = artifactsView(Array.from({ length: 2001 }, (_, i) => artifact(i))) as string;
    expect(html.match(/data-artifact=/g)).toHaveLength(ARTIFACTS_LISTED);
    expect(html).toContain(`… and ${2001 - ARTIFACTS_LISTED} more`);
    expect(html).toContain('<button type="button" data-archive>all 2001 files (.tar)</button>');
  });
});
