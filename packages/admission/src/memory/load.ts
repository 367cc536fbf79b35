// The in-memory store's load: one tenant's admission snapshot (the role `load.ts` has in every store's folder).
import type { AdmissionKey, AdmissionSnapshot } from '../store.js';
import type { MemoryState } from './state.js';
import { NO_LOAD, pathOf } from './tenant.js';

export function loadAdmission(m: MemoryState, key: AdmissionKey): AdmissionSnapshot {
  const t = m.tenants.get(key.tenant);
  if (!t) {
    return {
      prior: null,
      policy: null,
      global: m.global,
      causer: null,
      ancestors: [],
      path: [],
      sliceTaken: false,
      agentDisabled: false,
      load: NO_LOAD,
      globalSessions: m.globalSessions,
    };
  }
  const table = m.table;
  const causer = key.causedByRunId === undefined ? -1 : m.ids.get(t.no, key.causedByRunId);
  const prior = t.prior(table, key.requestId, m.ids.get(t.no, key.requestId));
  return {
    prior: prior < 0 ? null : table.decision(prior, key.requestId),
    policy: t.policy,
    global: m.global,
    causer: causer < 0 ? null : table.slot(causer),
    ancestors: causer < 0 ? [] : table.ancestors(causer),
    path: causer < 0 ? [t.root.env] : pathOf(table.envNode[causer]!),
    sliceTaken: key.sliceId !== undefined && t.envelopes.has(key.sliceId),
    agentDisabled: key.agentId !== undefined && t.disabledAgents.has(key.agentId),
    load: {
      queued: t.queued,
      queuedByClass: { interactive: t.interactive, background: t.background, batch: t.batch },
      running: t.running,
      sessions: t.sessions,
      earliestRunningEnd: t.runningEnds.peekPriority() ?? null,
      earliestSessionEnd: t.sessionEnds.peekPriority() ?? null,
    },
    globalSessions: m.globalSessions,
  };
}
