// The artifacts a runner's completion lists are the ones stored under its lease: each name is a path the runner
// uploaded for this epoch (`PUT /runner/v1/runs/:id/artifacts`, hashed by the control plane on the way in and
// listed in `runner_artifacts`), its uri `artifact:<that address>`, its digest and size, where given, the stored
// ones. A completion that lists anything else is refused and changes nothing: the record claims only what was
// stored, and `GET /runs/:id/artifact` serves exactly what it names.
import type { Executor } from '../db/tx.js';
import { attestationMismatch } from '../keys/attestation-check.js';

export interface ClaimedArtifact {
  name: string;
  uri: string;
  bytes?: number | undefined;
  digest?: string | undefined;
}

export async function checkArtifactClaims(
  ex: Executor,
  runId: string,
  epoch: number,
  claimed: readonly ClaimedArtifact[],
): Promise<void> {
  if (claimed.length === 0) return;
  const names = new Set(claimed.map((a) => a.name));
  if (names.size !== claimed.length)
    throw attestationMismatch('the outputs list one artifact path twice', { runId, epoch });
  const stored = await ex
    .selectFrom('runner_artifacts')
    .select(['path', 'address', 'size'])
    .where('run_id', '=', runId)
    .where('epoch', '=', epoch)
    .where('path', 'in', [...names])
    .execute();
  const byPath = new Map(stored.map((s) => [s.path, s]));
  for (const a of claimed) {
    const s = byPath.get(a.name);
    const same =
      s !== undefined &&
      a.uri === `artifact:${s.address}` &&
      (a.digest === undefined || a.digest === s.address) &&
      (a.bytes === undefined || a.bytes === Number(s.size));
    if (!same)
      throw attestationMismatch(
        s
          ? `artifact ${a.name} is not the one stored for epoch ${epoch}`
          : `artifact ${a.name} was not stored for epoch ${epoch}`,
        {
          runId,
          epoch,
          artifact: a.name,
          ...(s ? { stored: { address: s.address, bytes: Number(s.size) } } : {}),
        },
      );
  }
}
