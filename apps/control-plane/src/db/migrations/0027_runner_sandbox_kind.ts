// A runner holds session sandboxes only in images it registered for the kind `sandbox` (runners/sessions/
// hub.ts `place`); before, any registered image sufficed. Runners paired before that rule keep what they
// could hold: every non-revoked runner registers `sandbox` in each image it registered, and its declared
// capabilities say so. (A runner opening no session channel is placed nothing either way.)
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`INSERT INTO runner_images (runner_id, tenant_id, kind, image)
    SELECT DISTINCT i.runner_id, i.tenant_id, 'sandbox', i.image FROM runner_images i
    JOIN runners r ON r.id = i.runner_id WHERE r.state <> 'revoked'
    ON CONFLICT DO NOTHING`.execute(db);
  await sql`UPDATE runners SET capabilities = jsonb_set(capabilities, '{kinds}',
      (capabilities -> 'kinds') || '["sandbox"]'::jsonb)
    WHERE state <> 'revoked' AND jsonb_typeof(capabilities -> 'kinds') = 'array'
      AND NOT (capabilities -> 'kinds') @> '["sandbox"]'::jsonb`.execute(db);
}
