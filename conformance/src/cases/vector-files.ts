// Every vector file, by path under conformance/vectors/, as the generator would write it.
import { serialize, vectorPath } from '../vectors/files.js';
import { addressBook, vectorOf } from './generate.js';
import { ALL_CASES } from './index.js';

export function generateVectorFiles(): Map<string, string> {
  const files = new Map<string, string>();
  files.set('addresses.json', serialize(addressBook()));
  for (const c of ALL_CASES) {
    const v = vectorOf(c);
    const path = vectorPath('', v);
    if (files.has(path)) throw new Error(`two cases named ${v.class}/${v.name}`);
    files.set(path, serialize(v));
  }
  return files;
}
