// Where vectors live on disk: conformance/vectors/<class>/<name>.json, plus vectors/addresses.json.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLASSES, Vector, type VectorT } from './schema.js';

export function vectorPath(dir: string, v: Pick<VectorT, 'class' | 'name'>): string {
  return join(dir, v.class.toLowerCase(), `${v.name}.json`);
}

export function loadVectors(dir: string): VectorT[] {
  const out: VectorT[] = [];
  for (const cls of CLASSES) {
    const classDir = join(dir, cls.toLowerCase());
    const files = readdirSync(classDir)
      .filter((f) => f.endsWith('.json'))
      .map((f) => f.slice(0, -'.json'.length))
      .sort()
      .map((f) => `${f}.json`);
    for (const f of files) {
      const parsed = Vector.safeParse(JSON.parse(readFileSync(join(classDir, f), 'utf8')));
      if (!parsed.success) throw new Error(`${join(classDir, f)}: ${parsed.error.message}`);
      out.push(parsed.data);
    }
  }
  return out;
}

export function serialize(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}
