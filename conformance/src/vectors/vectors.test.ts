import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateVectorFiles } from '../cases/vector-files.js';
import { defaultVectorsDir } from '../package-root.js';
import { loadVectors } from './files.js';
import { applyPatch } from './json-patch.js';
import { CLASSES } from './schema.js';

describe('committed vectors', () => {
  it('are what the generator writes (run `pnpm --filter @everdict/conformance run vectors`)', () => {
    // Compared as JSON: the committed files are laid out by biome.
    for (const [path, text] of generateVectorFiles()) {
      expect(JSON.parse(readFileSync(join(defaultVectorsDir(), path), 'utf8')), path).toEqual(
        JSON.parse(text),
      );
    }
    expect(loadVectors(defaultVectorsDir()).length).toBe(generateVectorFiles().size - 1);
  });

  it('are each listed in the README', () => {
    const readme = readFileSync(join(defaultVectorsDir(), '..', 'README.md'), 'utf8');
    const listed = new Set([...readme.matchAll(/^\|\s*`([a-z0-9-]+)`\s*\|/gm)].map((m) => m[1]));
    const missing = loadVectors(defaultVectorsDir()).filter((v) => !listed.has(v.name));
    expect(missing.map((v) => v.name)).toEqual([]);
  });

  it('cover every class', () => {
    const vectors = loadVectors(defaultVectorsDir());
    for (const cls of CLASSES) expect(vectors.filter((v) => v.class === cls).length).toBeGreaterThan(10);
  });
});

describe('JSON patch', () => {
  const doc = { segments: [{ a: 1 }, { b: 2 }, { c: 3 }], head: 'x' };
  it('replaces, adds, removes and moves without touching the original', () => {
    expect(applyPatch(doc, [{ op: 'replace', path: '/segments/1/b', value: 9 }])).toEqual({
      segments: [{ a: 1 }, { b: 9 }, { c: 3 }],
      head: 'x',
    });
    expect(applyPatch(doc, [{ op: 'move', from: '/segments/2', path: '/segments/1' }])).toEqual({
      segments: [{ a: 1 }, { c: 3 }, { b: 2 }],
      head: 'x',
    });
    expect(
      applyPatch(doc, [
        { op: 'remove', path: '/head' },
        { op: 'add', path: '/segments/-', value: 4 },
      ]),
    ).toEqual({
      segments: [{ a: 1 }, { b: 2 }, { c: 3 }, 4],
    });
    expect(doc.segments).toHaveLength(3);
  });
});
