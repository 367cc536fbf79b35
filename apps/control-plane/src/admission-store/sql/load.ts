// Admission snapshots for many tenants in ONE statement (the create combiner's read). Only for task runs that
// draw on their tenant's root envelope (no causer, no slice, no agent): the snapshot is the tenant row, the
// global row, the root path (both as the `…_now` views give them: less what settles released), the earliest expected ends of running work, and the prior admissions of the
// batch's request ids. One statement is one consistent snapshot; the combined write re-checks every cap.
import {
  type AdmissionSnapshot,
  type Admitted,
  type Envelope,
  globalPolicy,
  rootEnvelopeId,
  tenantPolicy,
} from '@everdict/admission';
import type { Selectable } from 'kysely';
import { sql } from 'kysely';
import { type DbNumeric, json, numeric } from '../../db/numeric.js';
import { prepared } from '../../db/prepared.js';
import type { AdmEnvelopesTable, AdmGlobalTable, AdmTenantsTable } from '../../db/schema-admission.js';
import type { Executor } from '../../db/tx.js';
import { envelopeOf } from './rows.js';

interface Ends {
  task_end: DbNumeric | null;
  session_end: DbNumeric | null;
}

/** The stored parts of one tenant's snapshot (rows as the admission tables hold them). */
export interface SnapshotParts {
  prior: Admitted | null;
  tenant: Selectable<AdmTenantsTable> | undefined;
  global: Selectable<AdmGlobalTable> | undefined;
  causer: AdmissionSnapshot['causer'];
  ancestors: AdmissionSnapshot['ancestors'];
  path: Envelope[];
  sliceTaken: boolean;
  agentDisabled: boolean;
  ends: Ends | undefined;
}

/**
 * Policies as parsed before, by their stored JSON: every create batch reads the same few policies, and a
 * parse (zod, defaults filled in) cost more than the rest of the snapshot's mapping. The parsed value is
 * frozen (deeply: a policy is plain JSON), so no reader can change what the next batch gets. A policy that does
 * not parse throws as before and is not kept. At most MEMO_MAX entries (then the memo starts over).
 */
const MEMO_MAX = 256;
const tenantPolicies = new Map<string, ReturnType<typeof tenantPolicy>>();
const globalPolicies = new Map<string, ReturnType<typeof globalPolicy>>();

function memoParse<I, T>(memo: Map<string, T>, stored: I | undefined, parse: (input?: I) => T): T {
  const key = stored === undefined ? '' : JSON.stringify(stored);
  let parsed = memo.get(key);
  if (parsed === undefined) {
    parsed = deepFreeze(stored === undefined ? parse() : parse(stored));
    if (memo.size >= MEMO_MAX) memo.clear();
    memo.set(key, parsed);
  }
  return parsed;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** The snapshot `decide` reads, from its stored parts (the one mapping, for every loader). */
export function snapshotOf(p: SnapshotParts): AdmissionSnapshot {
  const t = p.tenant;
  const g = p.global;
  const qi = t?.queued_interactive ?? 0;
  const qb = t?.queued_background ?? 0;
  const qh = t?.queued_batch ?? 0;
  return {
    prior: p.prior,
    policy: t ? memoParse(tenantPolicies, t.policy, tenantPolicy) : null,
    global: memoParse(globalPolicies, g?.policy, globalPolicy),
    causer: p.causer,
    ancestors: p.ancestors,
    path: p.path,
    sliceTaken: p.sliceTaken,
    agentDisabled: p.agentDisabled,
    load: {
      queued: qi + qb + qh,
      queuedByClass: { interactive: qi, background: qb, batch: qh },
      running: t?.running ?? 0,
      sessions: { total: t?.sessions ?? 0, member: t?.member_sessions ?? 0 },
      earliestRunningEnd: p.ends?.task_end == null ? null : numeric(p.ends.task_end),
      earliestSessionEnd: p.ends?.session_end == null ? null : numeric(p.ends.session_end),
    },
    globalSessions: { total: g?.sessions ?? 0, member: g?.member_sessions ?? 0 },
  };
}

export interface TaskSnapshot {
  /** The snapshot with `prior: null`; priors of the batch's request ids are in `priors`. */
  snapshot: AdmissionSnapshot;
  priors: Map<string, Admitted>;
}

interface Row {
  tenant: string;
  tenant_row: Selectable<AdmTenantsTable> | null;
  global_row: Selectable<AdmGlobalTable> | null;
  priors: { request_id: string; decision: Admitted }[] | null;
  ends: Ends | null;
  path: Selectable<AdmEnvelopesTable>[] | null;
}

/** One statement: the task-run snapshot of every tenant in `keys` (tenant → its request ids). */
export async function loadTaskSnapshots(
  ex: Executor,
  keys: readonly { tenant: string; requestIds: readonly string[] }[],
): Promise<Map<string, TaskSnapshot>> {
  const input = keys.map((k) => ({
    tenant: k.tenant,
    root: rootEnvelopeId(k.tenant),
    requests: k.requestIds,
  }));
  const { rows } = await sql<Row>`${sql.raw(prepared('create_snapshots'))}
    WITH k AS (SELECT * FROM jsonb_to_recordset(${json(input)}::jsonb) AS k(tenant text, root text, requests jsonb))
    SELECT k.tenant,
      (SELECT to_jsonb(t) FROM adm_tenants_now t WHERE t.tenant = k.tenant) AS tenant_row,
      (SELECT to_jsonb(g) FROM adm_global g WHERE g.id = 1) AS global_row,
      (SELECT jsonb_agg(jsonb_build_object('request_id', a.request_id, 'decision', a.decision))
         FROM adm_admissions a
         WHERE a.tenant = k.tenant AND a.request_id IN (SELECT jsonb_array_elements_text(k.requests))) AS priors,
      (SELECT jsonb_build_object(
           'task_end', min(s.end_ms) FILTER (WHERE s.lifetime = 'task'),
           'session_end', min(s.end_ms) FILTER (WHERE s.lifetime = 'session'))
         FROM adm_slot_ends s WHERE s.tenant = k.tenant) AS ends,
      (WITH RECURSIVE p(id, parent_id, depth) AS (
           SELECT e.id, e.parent_id, 0 FROM adm_envelopes e WHERE e.tenant = k.tenant AND e.id = k.root
           UNION ALL
           SELECT e.id, e.parent_id, p.depth + 1 FROM adm_envelopes e JOIN p ON e.tenant = k.tenant AND e.id = p.parent_id
           WHERE p.depth < 64)
         SELECT jsonb_agg(to_jsonb(e) ORDER BY p.depth) FROM p JOIN adm_envelopes_now e ON e.tenant = k.tenant AND e.id = p.id
      ) AS path
    FROM k`.execute(ex);
  const out = new Map<string, TaskSnapshot>();
  for (const r of rows) {
    const t = r.tenant_row ?? undefined;
    const snapshot = snapshotOf({
      prior: null,
      tenant: t,
      global: r.global_row ?? undefined,
      causer: null,
      ancestors: [],
      path: t ? (r.path ?? []).map(envelopeOf) : [],
      sliceTaken: false,
      agentDisabled: false,
      ends: r.ends ?? undefined,
    });
    out.set(r.tenant, { snapshot, priors: new Map((r.priors ?? []).map((p) => [p.request_id, p.decision])) });
  }
  return out;
}
