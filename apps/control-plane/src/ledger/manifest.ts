// The environment manifest the control plane names for a run it parks or resumes when the executor names
// none: the address of `{manifest: <kind>, subject: <subject>}` — canonical JSON (run-model's, RFC 8785), so
// it is a function of the run alone and anyone holding the run (read back from jsonb or not) recomputes it.
//
// A control plane before canonical addressing hashed `JSON.stringify` of that value in the key order the run
// was read back in. A run it parked carries that older address in its `suspended` segment; resuming it here
// must name the same manifest or runrecord refuses (ManifestMismatch). So a resume that names no manifest
// takes the older form exactly when the run's last park recorded it — any other manifest stays refused.
import type { Hex, WireSegment } from '@everdict/runrecord';
import { addressOf, addressOfText } from './records.js';

type ManifestOf = { kind: string; subject: unknown };

const manifestValue = (run: ManifestOf) => ({ manifest: run.kind, subject: run.subject });

/** The run's own manifest (what a park names when its executor names none). */
export const runManifest = (run: ManifestOf): Hex => addressOf(manifestValue(run));

/** The pre-canonical address of the same value (JSON.stringify, key order as read). */
const legacyRunManifest = (run: ManifestOf): Hex => addressOfText(JSON.stringify(manifestValue(run)));

/**
 * The manifest a resume names when its executor names none: the run's own — or, for a run an older control
 * plane parked under the pre-canonical address of the same value, that address (the same environment).
 * `segments`: the run's record, which the resume appends to.
 */
export function resumeManifest(run: ManifestOf, segments: readonly WireSegment[]): Hex {
  const current = runManifest(run);
  const legacy = legacyRunManifest(run);
  if (legacy === current) return current;
  for (let i = segments.length - 1; i >= 0; i--) {
    const g = segments[i]!;
    if (g.kind === 'suspended') return g.manifest === legacy ? legacy : current;
  }
  return current;
}
