// The eval harness registry: `{id, version, image, command}` per tenant. A version is immutable: defining it
// again with the same body answers the stored one; with a different body, 409 `harness_conflict`.
import { Harness } from '@everdict/run-model';
import { iso, json } from '../db/numeric.js';
import type { Executor } from '../db/tx.js';
import { isUniqueViolation } from '../db/tx.js';
import { ControlPlaneError, notFound } from '../errors.js';
import type { Deps } from '../services/context.js';
import type { Principal } from '../services/types.js';

export interface HarnessView extends Harness {
  createdBy: string;
  createdAt: string;
}

type Row = {
  id: string;
  version: string;
  image: string;
  command: unknown;
  created_by: string;
  created_at: Date;
};

const view = (r: Row): HarnessView => ({
  id: r.id,
  version: r.version,
  image: r.image,
  command: r.command as string[],
  createdBy: r.created_by,
  createdAt: iso(r.created_at)!,
});

const sameBody = (a: Harness, b: Harness) =>
  a.image === b.image && JSON.stringify(a.command) === JSON.stringify(b.command);

async function find(
  ex: Executor,
  tenant: string,
  id: string,
  version: string,
): Promise<HarnessView | undefined> {
  const row = await ex
    .selectFrom('harnesses')
    .selectAll()
    .where('tenant_id', '=', tenant)
    .where('id', '=', id)
    .where('version', '=', version)
    .executeTakeFirst();
  return row ? view(row as Row) : undefined;
}

/** Define a harness version (201 when new; the stored one again when identical; else 409). */
export async function defineHarness(
  deps: Deps,
  p: Principal,
  raw: unknown,
): Promise<{ harness: HarnessView; created: boolean }> {
  const r = Harness.safeParse(raw);
  if (!r.success) throw r.error;
  const h = r.data;
  const conflict = (stored: HarnessView) =>
    new ControlPlaneError('harness_conflict', `harness ${h.id}@${h.version} is already defined differently`, {
      id: h.id,
      version: h.version,
      stored: { image: stored.image, command: stored.command },
    });
  const existing = await find(deps.db, p.tenantId, h.id, h.version);
  if (existing) {
    if (!sameBody(existing, h)) throw conflict(existing);
    return { harness: existing, created: false };
  }
  try {
    const row = await deps.db
      .insertInto('harnesses')
      .values({
        tenant_id: p.tenantId,
        id: h.id,
        version: h.version,
        image: h.image,
        command: json(h.command),
        created_by: p.actor,
        created_at: deps.clock(),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { harness: view(row as Row), created: true };
  } catch (e) {
    if (!isUniqueViolation(e)) throw e;
    const raced = await find(deps.db, p.tenantId, h.id, h.version);
    if (raced && sameBody(raced, h)) return { harness: raced, created: false };
    throw raced ? conflict(raced) : e;
  }
}

export async function listHarnesses(deps: Deps, p: Principal): Promise<HarnessView[]> {
  const rows = await deps.db
    .selectFrom('harnesses')
    .selectAll()
    .where('tenant_id', '=', p.tenantId)
    .orderBy('id')
    .orderBy('version')
    .execute();
  return rows.map((r) => view(r as Row));
}

/** A tenant's harness version, or 404. */
export async function resolveHarness(
  ex: Executor,
  tenant: string,
  id: string,
  version: string,
): Promise<Harness> {
  const h = await find(ex, tenant, id, version);
  if (!h) throw notFound('harness', `${id}@${version}`);
  return { id: h.id, version: h.version, image: h.image, command: h.command };
}
