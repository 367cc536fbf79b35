// Object keys. Every key a backend sees is `{tenant, path}`: the tenant is part of the key itself (the
// backends put it first: `<root>/tenants/<tenant>/…` on disk, `<prefix>tenants/<tenant>/…` in a bucket),
// never a filter applied afterwards. Ids are opaque strings; they are encoded into one safe path segment.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { parseOrThrow } from './errors.js';

/** A tenant or trajectory id: what run-model's `Id` admits (1–200 characters). */
export const StoreId = z.string().min(1).max(200);

export interface ObjectKey {
  readonly tenant: string;
  /** A `/`-separated path of encoded segments, relative to the tenant's root. */
  readonly path: string;
}

const MAX_SEGMENT = 120;

/**
 * One path segment: [A-Za-z0-9_-] kept, every other UTF-8 byte written `.xx` (lowercase hex) — so no
 * segment is `.` or `..` and none contains `/`. An encoding longer than 120 characters becomes `~` + the
 * SHA-256 hex of the id (file names stop at 255 bytes); records keep the id itself, so nothing decodes keys.
 */
export function encodeSegment(id: string): string {
  let out = '';
  for (const byte of Buffer.from(id, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9_-]/.test(c) ? c : `.${byte.toString(16).padStart(2, '0')}`;
  }
  return out.length <= MAX_SEGMENT ? out : `~${createHash('sha256').update(id, 'utf8').digest('hex')}`;
}

export function checkTenant(tenant: string): string {
  return parseOrThrow(StoreId, tenant, 'tenant');
}

export function checkId(id: string, what = 'trajectory id'): string {
  return parseOrThrow(StoreId, id, what);
}

/** The layout under one tenant. */
export const layout = {
  trajectoryDir: (id: string) => `trajectories/${encodeSegment(id)}`,
  chunksDir: (id: string) => `trajectories/${encodeSegment(id)}/chunks`,
  chunk: (id: string, name: string) => `trajectories/${encodeSegment(id)}/chunks/${name}`,
  sealedObject: (id: string) => `trajectories/${encodeSegment(id)}/trajectory.jsonl.gz`,
  seal: (id: string) => `trajectories/${encodeSegment(id)}/seal.json`,
  meta: (id: string) => `trajectories/${encodeSegment(id)}/meta.json`,
  deletion: (id: string) => `trajectories/${encodeSegment(id)}/deleted.json`,
  trajectoriesRoot: 'trajectories/',
  importIndexDir: (source: string, externalId: string) =>
    `imports/${encodeSegment(source)}/${encodeSegment(externalId)}/`,
  importIndex: (source: string, externalId: string, id: string) =>
    `imports/${encodeSegment(source)}/${encodeSegment(externalId)}/${encodeSegment(id)}.json`,
  artifact: (hex: string) => `artifacts/blake3/${hex.slice(0, 2)}/${hex}`,
  upload: (token: string) => `uploads/${token}`,
} as const;
