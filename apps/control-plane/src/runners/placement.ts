// Whether a runner-kind run (command, eval, sandbox) can be placed at all. The executor registry
// (executors/registry.ts, consulted synchronously at every create door) holds the lane RUNNER_INDEX for
// these kinds: it defers to the DURABLE placement index — `runner_images`, one row per registered,
// non-revoked runner × kind × image, read from the ledger so every replica decides alike. At the API's
// create doors (POST /runs, POST /groups) such a run is admissible only when another lane of the registry
// takes it (a declared in-process runner) or some runner of the tenant, or a shared one, declares its kind
// and its image; otherwise 422 `no_placement`, before anything is saved. An eval run's image is its
// harness's (an unknown harness version is 404). A sandbox run reaches a runner only as a held-open session
// (the sessions module's own door): any other sandbox run at this lane is 422 `no_placement`.

import { type CommandSubject, commandImage } from '@everdict/run-model';
import { sql } from 'kysely';
import type { Executor } from '../db/tx.js';
import { ControlPlaneError } from '../errors.js';
import type { ExecutorLane, Placement } from '../executors/registry.js';
import type { Deps } from '../services/context.js';
import { resolveHarness } from './harnesses.js';
import { placeable, placeableCache } from './placeable.js';
import { RUNNER_KINDS } from './schemas.js';

const isRunnerKind = (k: string): boolean => (RUNNER_KINDS as readonly string[]).includes(k);

/** The registry lane of paired runners: runner kinds at driver placements; the durable index decides. */
export const RUNNER_INDEX: ExecutorLane = {
  name: 'runners',
  accepts: (kind, p) => isRunnerKind(kind) && p.where !== 'inline' && p.where !== 'runtime',
};

/** The image a run of `kind` with `subject` executes in (null: not a runner kind, or a subject that does not say). */
export async function imageOf(
  ex: Executor,
  tenant: string,
  kind: string,
  subject: unknown,
): Promise<string | null> {
  if (typeof subject !== 'object' || subject === null) return null;
  const s = subject as Record<string, unknown>;
  if (kind === 'command') return commandImage(s as CommandSubject);
  if (kind === 'sandbox') return typeof s.image === 'string' ? s.image : null;
  if (kind === 'eval') {
    const h = s.harness as { id?: unknown; version?: unknown } | undefined;
    if (typeof h?.id !== 'string' || typeof h.version !== 'string') return null;
    return (await resolveHarness(ex, tenant, h.id, h.version)).image;
  }
  return null;
}

/**
 * Throw 422 `no_placement` unless a runner can take this run (a malformed spec is left to the create's 400).
 * `ex`: the transaction a subscription firing creates its run in (the durable index read there, so a runner
 * revoked since the subscription was made is seen, and the firing is recorded as refused).
 */
export async function assertPlaceable(
  deps: Deps,
  tenant: string,
  spec: unknown,
  ex: Executor = deps.db,
): Promise<void> {
  if (typeof spec !== 'object' || spec === null) return;
  const { kind, subject, placement } = spec as { kind?: unknown; subject?: unknown; placement?: unknown };
  if (typeof kind !== 'string' || !isRunnerKind(kind)) return;
  const where: Placement =
    typeof placement === 'object' && placement !== null && typeof (placement as Placement).where === 'string'
      ? (placement as Placement)
      : { where: 'driver' };
  if (deps.executors.takers(kind, where).some((n) => n !== RUNNER_INDEX.name)) return;
  // A runner holds a sandbox only as a held-open session (lifetime session, POST /sandboxes: sessions/hub.ts);
  // it is never leased one (schemas.ts leasedKinds), so any other sandbox run would wait queued forever.
  if (kind === 'sandbox')
    throw new ControlPlaneError(
      'no_placement',
      'a runner holds a sandbox only as a session: lifetime session (with ttlSec) or POST /sandboxes',
      { kind, placement: where },
    );
  const image = await imageOf(ex, tenant, kind, subject);
  if (image === null) return;
  // The replica's remembered positives (placeable.ts PlaceableCache) unless inside the caller's transaction.
  const ok =
    ex === deps.db
      ? await placeableCache(deps).placeable(ex, tenant, kind, image)
      : await placeable(ex, tenant, kind, image);
  if (!ok) {
    const draining = await drainingTakers(ex, tenant, kind, image);
    const named = draining.map((d) => `${d.id} (${d.name})`).join(', ');
    const why = draining.length > 0 ? ` (${named} would, but draining takes no new runs)` : '';
    throw new ControlPlaneError(
      'no_placement',
      `no registered runner takes ${kind} runs in image ${image}${why}`,
      {
        kind,
        placement: where,
        image,
        ...(draining.length > 0 ? { draining: draining.map((d) => d.id) } : {}),
      },
    );
  }
}

/**
 * The draining runners that would take `kind` runs in `image` for `tenant` (its own and the shared ones): read
 * only on a refusal, so a user told no runner takes the run learns it is the drain.
 */
async function drainingTakers(
  ex: Executor,
  tenant: string,
  kind: string,
  image: string,
): Promise<{ id: string; name: string }[]> {
  const { rows } = await sql<{ id: string; name: string }>`
    SELECT id, name FROM runners
    WHERE state = 'draining' AND (tenant_id = ${tenant} OR tenant_id IS NULL)
      AND capabilities -> 'kinds' ? ${kind} AND capabilities -> 'images' ? ${image}
    ORDER BY id LIMIT 5`.execute(ex);
  return rows;
}
