// The environment manifest the control plane names for a run it parks or resumes when the executor names
// none: the address of `{manifest: <kind>, subject: <subject>}` — canonical JSON (run-model's, RFC 8785), so
// it is a function of the run alone and anyone holding the run (read back from jsonb or not) recomputes it.
//
// A control plane before canonical addressing hashed `JSON.stringify` of that value in the key order the run
// was read back in. A run it parked carries that older address in its `suspended` segment; resuming it here
// must name the same manifest or runrecord refuses (ManifestMismatch). So a resume that names no manifest
// takes the older form exactly when the run's last park recorded it — any other manifest stays refused.
import { blake3, bytesToHex, type Hex } from '@everdict/runrecord';
import { sql } from 'kysely';
import type { Executor } from '../db/tx.js';
import { addressOf } from './records.js';

type ManifestOf = { kind: string; subject: unknown };

const manifestValue = (run: ManifestOf) => ({ manifest: run.kind, subject: run.subject });

/** The run's own manifest (what a park names when its executor names none). */
export const runManifest = (run: ManifestOf): Hex => addressOf(manifestValue(run));

/** The pre-canonical address of the same value (JSON.stringify, key order as read). */
const legacyRunManifest = (run: ManifestOf): Hex =>
  bytesToHex(blake3(new TextEncoder().encode(JSON.stringify(manifestValue(run)))));

/** The manifest the run's last `suspended` segment names (null: never parked). */
async function parkedManifest(ex: Executor, runId: string): Promise<string | null> {
  const row = await ex
    .selectFrom('record_segments')
    .select(sql<string | null>`payload->>'manifest'`.as('manifest'))
    .where('run_id', '=', runId)
    .where(sql<boolean>`payload->>'kind' = 'suspended'`)
    .orderBy('idx', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row?.manifest ?? null;
}

/**
 * The manifest a resume names when its executor names none: the run's own — or, for a run an older control
 * plane parked under the pre-canonical address of the same value, that address (the same environment).
 */
export async function resumeManifest(ex: Executor, runId: string, run: ManifestOf): Promise<Hex> {
  const current = runManifest(run);
  const legacy = legacyRunManifest(run);
  if (legacy === current) return current;
  return (await parkedManifest(ex, runId)) === legacy ? legacy : current;
}
