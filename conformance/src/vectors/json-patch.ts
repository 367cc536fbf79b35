// RFC 6902 JSON Patch (replace, add, remove, move) over plain JSON values, returning a new value.
import type { PatchOpT } from './schema.js';

type Json = unknown;

function tokens(pointer: string): string[] {
  return pointer === ''
    ? []
    : pointer
        .slice(1)
        .split('/')
        .map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
}

function isContainer(v: Json): v is Record<string, Json> | Json[] {
  return typeof v === 'object' && v !== null;
}

function parentOf(doc: Json, pointer: string): { parent: Record<string, Json> | Json[]; key: string } {
  const path = tokens(pointer);
  const key = path.pop();
  if (key === undefined) throw new Error('cannot patch the document root');
  let at: Json = doc;
  for (const t of path) {
    if (!isContainer(at)) throw new Error(`no such path: ${pointer}`);
    at = Array.isArray(at) ? at[Number(t)] : at[t];
  }
  if (!isContainer(at)) throw new Error(`no such path: ${pointer}`);
  return { parent: at, key };
}

function read(doc: Json, pointer: string): Json {
  const { parent, key } = parentOf(doc, pointer);
  return Array.isArray(parent) ? parent[Number(key)] : parent[key];
}

function remove(doc: Json, pointer: string): void {
  const { parent, key } = parentOf(doc, pointer);
  if (Array.isArray(parent)) parent.splice(Number(key), 1);
  else delete parent[key];
}

function add(doc: Json, pointer: string, value: Json, replace: boolean): void {
  const { parent, key } = parentOf(doc, pointer);
  if (!Array.isArray(parent)) parent[key] = value;
  else if (key === '-') parent.push(value);
  else parent.splice(Number(key), replace ? 1 : 0, value);
}

export function applyPatch(doc: Json, patch: readonly PatchOpT[]): Json {
  const out: Json = structuredClone(doc);
  for (const op of patch) {
    if (op.op === 'remove') remove(out, op.path);
    else if (op.op === 'move') {
      const value = read(out, op.from);
      remove(out, op.from);
      add(out, op.path, value, false);
    } else add(out, op.path, structuredClone(op.value), op.op === 'replace');
  }
  return out;
}
