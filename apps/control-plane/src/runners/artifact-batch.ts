// Many small artifacts in one call (`POST /runner/v1/runs/:id/artifacts:batch`): an out/ of thousands of small
// files paid, per file, a lease check, a listing transaction and an HTTP round trip — on PGlite's one connection
// one after another. A batch checks the lease once, stages each file, lists them all in one transaction
// (`commitStaged`, the single upload's rule) and places them. A file past the artifact bound is answered 413 in
// its place and not stored; the others still are. A lease that is gone refuses the whole batch (409).
import { discardStaged, type StagedArtifact, stageArtifact } from '@everdict/trajectory-store';
import { z } from 'zod';
import type { Deps } from '../services/context.js';
import { mapStoreErrors } from '../trajectory/errors.js';
import type { RunTrajectories } from '../trajectory/run-trajectories.js';
import {
  ARTIFACT_MAX_BYTES,
  artifactTooLarge,
  commitStaged,
  leasedRunTenant,
  noStore,
  parse,
} from './intervals.js';
import type { RunnerIdentity } from './registry.js';
import { ArtifactBatchInput } from './schemas.js';

/** One file's answer, in the batch's order: stored (201), or refused past the bound (413) and not stored. */
export const BatchedArtifact = z.discriminatedUnion('status', [
  z.object({ path: z.string(), status: z.literal(201), address: z.string(), size: z.int() }),
  z.object({
    path: z.string(),
    status: z.literal(413),
    code: z.literal('artifact_too_large'),
    detail: z.string(),
    maxBytes: z.int(),
  }),
]);
export type BatchedArtifact = z.infer<typeof BatchedArtifact>;

export async function putArtifactBatch(
  deps: Deps,
  trajectories: RunTrajectories | null,
  runner: RunnerIdentity,
  runId: string,
  input: unknown,
  maxBytes = ARTIFACT_MAX_BYTES,
): Promise<{ results: BatchedArtifact[] }> {
  const batch = parse(ArtifactBatchInput, input);
  const tenant = await leasedRunTenant(deps, runner, runId, batch.epoch);
  if (!trajectories) throw noStore();
  const backend = trajectories.store.backend;
  const staged: StagedArtifact[] = [];
  const results: BatchedArtifact[] = [];
  try {
    for (const file of batch.files) {
      const bytes = Buffer.from(file.content, 'base64');
      if (bytes.byteLength > maxBytes) {
        const refusal = artifactTooLarge(maxBytes);
        results.push({
          path: file.path,
          status: 413,
          code: 'artifact_too_large',
          detail: refusal.message,
          maxBytes,
        });
        continue;
      }
      const one = await mapStoreErrors(() =>
        stageArtifact(backend, tenant, { path: file.path, body: bytes }),
      );
      staged.push(one);
      results.push({ path: file.path, status: 201, address: one.address, size: one.size });
    }
  } catch (err) {
    // A store that failed part-way: nothing of the batch is listed, and what was staged goes.
    await Promise.all(staged.map((a) => discardStaged(backend, a).catch(() => undefined)));
    throw err;
  }
  if (staged.length > 0) await commitStaged(deps, backend, runner, runId, batch.epoch, staged);
  return { results };
}
