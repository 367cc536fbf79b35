// Whether a run can be placed at all: a command/eval/sandbox run is admissible only when some registered,
// non-revoked runner (the tenant's or a shared one) declares its kind and image — read from the ledger's
// placement index, so every replica decides alike. Otherwise 422 `no_placement`, before anything is saved.
// An eval run's image is its harness's (an unknown harness version is 404).
import { type CommandSubject, commandImage } from '@everdict/run-model';
import type { Executor } from '../db/tx.js';
import { ControlPlaneError } from '../errors.js';
import { resolveHarness } from './harnesses.js';
import { placeable } from './registry.js';
import { RUNNER_KINDS } from './schemas.js';

/** `runners`: the rule above; `open`: no check (tests of other parts that queue driver runs nobody takes). */
export type PlacementMode = 'runners' | 'open';

const isRunnerKind = (k: string): boolean => (RUNNER_KINDS as readonly string[]).includes(k);

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

/** Throw 422 `no_placement` unless a runner can take this run (a malformed subject is left to the create's 400). */
export async function assertPlaceable(
  ex: Executor,
  mode: PlacementMode,
  tenant: string,
  spec: unknown,
): Promise<void> {
  if (mode === 'open' || typeof spec !== 'object' || spec === null) return;
  const { kind, subject } = spec as { kind?: unknown; subject?: unknown };
  if (typeof kind !== 'string' || !isRunnerKind(kind)) return;
  const image = await imageOf(ex, tenant, kind, subject);
  if (image === null) return;
  if (!(await placeable(ex, tenant, kind, image)))
    throw new ControlPlaneError('no_placement', `no registered runner takes ${kind} runs in image ${image}`, {
      kind,
      image,
    });
}
