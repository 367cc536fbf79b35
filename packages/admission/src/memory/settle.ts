// The in-memory store's settle: admission's one settle rule (`settleRefusal`), then the counters, the
// envelope path and the status (the role `settle.ts` has in every store's folder).
import { settledEnvelope } from '../envelope.js';
import { adjust } from '../session-pool.js';
import { type Settlement, type SettleResult, settleRefusal } from '../store.js';
import type { MemoryState } from './state.js';

export function settle(m: MemoryState, s: Settlement): SettleResult {
  const t = m.tenants.get(s.tenant);
  const r = t ? m.ids.get(t.no, s.runId) : -1;
  if (!t || r < 0) return { settled: false, reason: 'unknown_run' };
  const table = m.table;
  const from = table.statusOf(r);
  const refused = settleRefusal(from, s);
  if (refused !== null) return { settled: false, reason: refused };
  const member = table.member[r] === 1;
  if (from === 'queued') {
    m.queue.remove(t.queue, r);
    t.countQueued(table.classOf(r), -1);
  } else if (table.isSession(r)) {
    t.sessions = adjust(t.sessions, member, -1);
    m.globalSessions = adjust(m.globalSessions, member, -1);
    t.sessionEnds.delete(r);
  } else {
    t.running--;
    t.runningEnds.delete(r);
    if (t.running < t.policy.maxConcurrent) m.queue.setBlocked(t.queue, false);
  }
  for (let n = table.envNode[r] ?? null; n; n = n.parent) n.env = settledEnvelope(n.env, s.actuals);
  table.setStatus(r, s.status);
  return { settled: true, from, slot: table.slot(r) }; // its status never changes again
}
