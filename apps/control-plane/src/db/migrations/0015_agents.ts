// Agents (issue 16, src/agents/): the agent registry with its versions, each turn's opening message and
// park, and the calls a turn dispatched (a caused run, or a question for a person) with their answers.
// Resolution of a run call is derived from the caused run's status (never a second copy of it).
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE agents (
    tenant_id text NOT NULL,
    id text NOT NULL,
    name text NOT NULL,
    version integer NOT NULL,
    enabled boolean NOT NULL,
    created_by text NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id))`.execute(db);
  await sql`CREATE TABLE agent_versions (
    tenant_id text NOT NULL,
    agent_id text NOT NULL,
    version integer NOT NULL,
    spec jsonb NOT NULL,
    created_by text NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, agent_id, version))`.execute(db);
  await sql`CREATE TABLE agent_turns (
    run_id text PRIMARY KEY,
    tenant_id text NOT NULL,
    agent_id text NOT NULL,
    agent_version integer NOT NULL,
    input_text text,
    parked_at_ms bigint,
    transcript_bytes bigint,
    created_at timestamptz NOT NULL)`.execute(db);
  await sql`CREATE TABLE agent_calls (
    turn_id text NOT NULL,
    call_id text NOT NULL,
    tenant_id text NOT NULL,
    tool text NOT NULL,
    caused_run_id text,
    question text,
    resolution jsonb,
    created_at timestamptz NOT NULL,
    resolved_at timestamptz,
    PRIMARY KEY (turn_id, call_id))`.execute(db);
  await sql`CREATE INDEX agent_calls_caused ON agent_calls (caused_run_id) WHERE caused_run_id IS NOT NULL`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS agent_calls`.execute(db);
  await sql`DROP TABLE IF EXISTS agent_turns`.execute(db);
  await sql`DROP TABLE IF EXISTS agent_versions`.execute(db);
  await sql`DROP TABLE IF EXISTS agents`.execute(db);
}
