// The three patch types the apiserver accepts on a PATCH: JSON merge patch (RFC 7386), strategic merge
// patch (what `kubectl apply` and `kubectl patch` send for built-in kinds: lists merged by a merge key,
// `$patch`, `$setElementOrder/…`, `$retainKeys`, `$deleteFromPrimitiveList/…` directives) and JSON patch
// (RFC 6902). Strategic merge keys come from a table of the built-in types' patchMergeKey tags.
import { errors } from './status.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const isObject = (v: Json | undefined): v is JsonObject =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export function mergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return patch;
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key] ?? null, value);
  }
  return out;
}

/** patchMergeKey of the built-in types, by field name. Lists not named here are replaced whole. */
const MERGE_KEYS: Record<string, string | ((items: Json[]) => string)> = {
  containers: 'name',
  initContainers: 'name',
  ephemeralContainers: 'name',
  env: 'name',
  volumes: 'name',
  volumeMounts: 'mountPath',
  volumeDevices: 'devicePath',
  imagePullSecrets: 'name',
  hostAliases: 'ip',
  conditions: 'type',
  ownerReferences: 'uid',
  resourceClaims: 'name',
  topologySpreadConstraints: 'topologyKey',
  // container ports merge on containerPort, service ports on port
  ports: (items) => (items.some((i) => isObject(i) && 'containerPort' in i) ? 'containerPort' : 'port'),
};
/** Lists of scalars with patchStrategy "merge": a patch adds to them instead of replacing them. */
const MERGED_SCALAR_LISTS = new Set(['finalizers']);

function mergeKeyOf(field: string, items: Json[]): string | undefined {
  const key = MERGE_KEYS[field];
  return typeof key === 'function' ? key(items) : key;
}

export function strategicMergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return patch;
  if (patch.$patch === 'replace') {
    const { $patch: _, ...rest } = patch;
    return stripDirectives(rest);
  }
  if (patch.$patch === 'delete') return null;
  const out: JsonObject = isObject(target) ? { ...target } : {};
  const orders = new Map<string, Json[]>();
  for (const [key, value] of Object.entries(patch)) {
    if (key === '$retainKeys' || key === '$patch') continue;
    if (key.startsWith('$setElementOrder/')) {
      orders.set(key.slice('$setElementOrder/'.length), Array.isArray(value) ? value : []);
      continue;
    }
    if (key.startsWith('$deleteFromPrimitiveList/')) {
      const field = key.slice('$deleteFromPrimitiveList/'.length);
      const current = out[field];
      if (Array.isArray(current) && Array.isArray(value))
        out[field] = current.filter((v) => !value.includes(v));
      continue;
    }
    if (value === null) {
      delete out[key];
      continue;
    }
    const current = out[key];
    if (Array.isArray(value)) out[key] = mergeList(key, Array.isArray(current) ? current : [], value);
    else if (isObject(value)) {
      const merged = strategicMergePatch(current ?? null, value);
      if (merged === null) delete out[key];
      else out[key] = merged;
    } else out[key] = value;
  }
  for (const [field, order] of orders) {
    const list = out[field];
    if (Array.isArray(list)) out[field] = applyOrder(field, list, order);
  }
  if (Array.isArray(patch.$retainKeys)) {
    const keep = new Set(patch.$retainKeys.filter((k): k is string => typeof k === 'string'));
    for (const key of Object.keys(out)) if (!keep.has(key)) delete out[key];
  }
  return out;
}

function mergeList(field: string, current: Json[], patch: Json[]): Json[] {
  if (MERGED_SCALAR_LISTS.has(field)) return [...current, ...patch.filter((v) => !current.includes(v))];
  const key = mergeKeyOf(field, [...current, ...patch]);
  if (!key || !patch.every(isObject)) return stripDirectives(patch) as Json[];
  if (patch.some((item) => isObject(item) && item.$patch === 'replace')) {
    return stripDirectives(patch.filter((item) => !(isObject(item) && item.$patch === 'replace'))) as Json[];
  }
  const out = [...current];
  for (const item of patch as JsonObject[]) {
    const index = out.findIndex((c) => isObject(c) && c[key] === item[key]);
    if (item.$patch === 'delete') {
      if (index >= 0) out.splice(index, 1);
    } else if (index >= 0) out[index] = strategicMergePatch(out[index] ?? null, item);
    else out.push(strategicMergePatch(null, item));
  }
  return out;
}

/** Order a merged list as `$setElementOrder` says; items it does not name keep their place after it. */
function applyOrder(field: string, list: Json[], order: Json[]): Json[] {
  const key = mergeKeyOf(field, list);
  const identity = (item: Json): Json | undefined => (key && isObject(item) ? item[key] : item);
  const wanted = order.map((o) => (key && isObject(o) ? o[key] : o));
  const ordered: Json[] = [];
  for (const id of wanted) {
    const item = list.find((i) => identity(i) === id);
    if (item !== undefined) ordered.push(item);
  }
  for (const item of list) if (!wanted.includes(identity(item) ?? null)) ordered.push(item);
  return ordered;
}

function stripDirectives(value: Json): Json {
  if (Array.isArray(value)) return value.map(stripDirectives);
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(value)) if (!k.startsWith('$')) out[k] = stripDirectives(v);
  return out;
}

type Operation = { op: string; path: string; from?: string; value?: Json };

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw errors.badRequest(`invalid JSON pointer: ${path}`);
  return path
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function locate(doc: Json, parts: string[]): { parent: Json; last: string } {
  let parent: Json = doc;
  for (const part of parts.slice(0, -1)) {
    const next: Json | undefined = Array.isArray(parent)
      ? parent[Number(part)]
      : isObject(parent)
        ? parent[part]
        : undefined;
    if (next === undefined)
      throw errors.invalid('Patch', '', '', [{ field: part, message: 'path not found' }]);
    parent = next;
  }
  return { parent, last: parts[parts.length - 1] ?? '' };
}

function get(doc: Json, path: string): Json {
  let current: Json | undefined = doc;
  for (const part of pointer(path)) {
    current = Array.isArray(current) ? current[Number(part)] : isObject(current) ? current[part] : undefined;
    if (current === undefined)
      throw errors.invalid('Patch', '', '', [{ field: path, message: 'path not found' }]);
  }
  return current;
}

function remove(doc: Json, path: string): void {
  const { parent, last } = locate(doc, pointer(path));
  if (Array.isArray(parent)) parent.splice(Number(last), 1);
  else if (isObject(parent) && last in parent) delete parent[last];
  else throw errors.invalid('Patch', '', '', [{ field: path, message: 'path not found' }]);
}

function add(doc: Json, path: string, value: Json, replace: boolean): Json {
  const parts = pointer(path);
  if (parts.length === 0) return value;
  const { parent, last } = locate(doc, parts);
  if (Array.isArray(parent)) {
    const index = last === '-' ? parent.length : Number(last);
    if (replace) parent[index] = value;
    else parent.splice(index, 0, value);
  } else if (isObject(parent)) parent[last] = value;
  else throw errors.invalid('Patch', '', '', [{ field: path, message: 'path not found' }]);
  return doc;
}

export function jsonPatch(target: Json, operations: unknown): Json {
  if (!Array.isArray(operations)) throw errors.badRequest('a JSON patch must be an array of operations');
  let doc = structuredClone(target);
  for (const op of operations as Operation[]) {
    switch (op.op) {
      case 'add':
        doc = add(doc, op.path, op.value ?? null, false);
        break;
      case 'replace':
        get(doc, op.path);
        doc = add(doc, op.path, op.value ?? null, true);
        break;
      case 'remove':
        remove(doc, op.path);
        break;
      case 'copy':
      case 'move': {
        const value = structuredClone(get(doc, op.from ?? ''));
        if (op.op === 'move') remove(doc, op.from ?? '');
        doc = add(doc, op.path, value, false);
        break;
      }
      case 'test':
        if (JSON.stringify(get(doc, op.path)) !== JSON.stringify(op.value)) {
          throw errors.invalid('Patch', '', '', [{ field: op.path, message: 'test operation failed' }]);
        }
        break;
      default:
        throw errors.badRequest(`unknown JSON patch operation: ${String(op.op)}`);
    }
  }
  return doc;
}

export type { Json };
