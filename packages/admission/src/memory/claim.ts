// The in-memory store's claim: up to `capacity` queued runs in admission's dispatch order (the kernel's
// `Wfq.next`), started at `now` (the role `claim.ts` has in every store's folder).
import type { Dispatch } from '../store.js';
import type { MemoryState } from './state.js';

export function claim(m: MemoryState, capacity: number, now: number): Dispatch[] {
  const out: Dispatch[] = [];
  const table = m.table;
  while (out.length < capacity) {
    const r = m.queue.next(now);
    if (r < 0) break;
    const t = m.byNo[table.tenant[r]!]!;
    const runClass = table.classOf(r);
    const admittedAt = table.enqueuedAt[r]!;
    table.setStatus(r, 'running');
    table.startedAt[r] = now;
    t.countQueued(runClass, -1);
    t.running++;
    const expected = table.expectedOf(r);
    if (expected !== null) t.runningEnds.set(r, now + expected, 0);
    if (t.running >= t.policy.maxConcurrent) m.queue.setBlocked(t.queue, true);
    out.push({
      runId: table.runId[r]!,
      tenant: t.id,
      class: runClass,
      enqueuedAt: admittedAt,
      waitedMs: now - admittedAt,
    });
  }
  return out;
}
