// labelSelector and fieldSelector query parameters, parsed and matched as the apiserver does.
import { errors } from './status.js';

type Requirement =
  | { key: string; op: 'in' | 'notin'; values: string[] }
  | { key: string; op: 'exists' | 'doesnotexist' };

export type Matcher = (object: KubeObject) => boolean;

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

/** Split on commas that are not inside a `(…)` value set. */
function splitTerms(text: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      terms.push(text.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(text.slice(start));
  return terms.map((t) => t.trim()).filter((t) => t.length > 0);
}

function parseLabelTerm(term: string): Requirement {
  const set = /^(\S+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(term);
  if (set) {
    const values = (set[3] ?? '').split(',').map((v) => v.trim());
    return { key: set[1] ?? '', op: set[2] as 'in' | 'notin', values };
  }
  const eq = /^([^!=\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(term);
  if (eq) return { key: eq[1] ?? '', op: eq[2] === '!=' ? 'notin' : 'in', values: [eq[3] ?? ''] };
  if (/^![^\s!=]+$/.test(term)) return { key: term.slice(1), op: 'doesnotexist' };
  if (/^[^\s!=(),]+$/.test(term)) return { key: term, op: 'exists' };
  throw errors.badRequest(`unable to parse requirement: found '${term}'`);
}

export function parseLabelSelector(text: string | null): Matcher {
  if (!text) return () => true;
  const requirements = splitTerms(text).map(parseLabelTerm);
  return (object) => {
    const labels = object.metadata.labels ?? {};
    return requirements.every((r) => {
      const present = Object.hasOwn(labels, r.key);
      switch (r.op) {
        case 'exists':
          return present;
        case 'doesnotexist':
          return !present;
        case 'in':
          return present && r.values.includes(labels[r.key] ?? '');
        default:
          return !present || !r.values.includes(labels[r.key] ?? '');
      }
    });
  };
}

function fieldValue(object: KubeObject, path: string): string | undefined {
  let current: unknown = object;
  for (const part of path.split('.')) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current === undefined || current === null ? undefined : String(current);
}

const FIELDS = new Set(['metadata.name', 'metadata.namespace', 'status.phase', 'spec.nodeName']);

export function parseFieldSelector(text: string | null): Matcher {
  if (!text) return () => true;
  const terms = splitTerms(text).map((term) => {
    const m = /^([^!=]+?)\s*(==|=|!=)\s*(.*)$/.exec(term);
    if (!m) throw errors.badRequest(`invalid selector: '${text}'; can't understand '${term}'`);
    const field = (m[1] ?? '').trim();
    if (!FIELDS.has(field)) throw errors.badRequest(`field label not supported: ${field}`);
    return { field, negate: m[2] === '!=', value: (m[3] ?? '').trim() };
  });
  return (object) => terms.every((t) => ((fieldValue(object, t.field) ?? '') === t.value) !== t.negate);
}
