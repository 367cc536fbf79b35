// Agent hosts (issue 16 item 4): an `everdict-agent` process pairs like a runner — a pairing token (the
// runners' table of tokens, single use) redeemed with its Ed25519 public key — and signs the attestation
// of every interval it ends; the control plane checks it against this row before appending the `executed`
// segment. The key never leaves the host; the row keeps only its public half. Revoked hosts stay listed
// (GET /keys, with `revokedAt`) so old records still verify.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE agent_hosts (
    id text PRIMARY KEY,
    tenant_id text,
    name text NOT NULL,
    public_key text NOT NULL,
    state text NOT NULL DEFAULT 'active',
    created_at timestamptz NOT NULL,
    revoked_at timestamptz)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS agent_hosts`.execute(db);
}
