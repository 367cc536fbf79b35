// The fake's run groups (experiment / batch → rollup, scoring with run-model's graders, promotion), over the
// fake's runs: the part of `fakeServices` the HTTP edge tests exercise through /groups.

import { applyGraders, EMPTY_USAGE, TERMINAL_STATUSES } from '@everdict/run-model';
import { ControlPlaneError } from '../../errors.js';
import type { RunView } from '../../ledger/views.js';
import type { ControlPlaneServices } from '../../services/api.js';
import { CreateGroupInput, type GroupView, type Principal, ScoreGroupInput } from '../../services/types.js';

/** run-model's terminal statuses, as a set of strings for the fakes' loose status fields. */
export const TERMINAL: ReadonlySet<string> = new Set(TERMINAL_STATUSES);

/** What the groups share with the rest of the fake. */
export interface FakeGroupsContext {
  id(prefix: string): string;
  now(): string;
  runs: ReadonlyMap<string, RunView>;
  own<T extends object>(map: Map<string, T>, p: Principal, key: string, what: string): T;
  createRun(p: Principal, raw: unknown, causedByRunId?: string, groupId?: string): RunView;
}

/** The fakes run nothing: their groups used nothing. */
const NO_USAGE = { ...EMPTY_USAGE, cpuTimeMs: 0 };

export function fakeGroups(ctx: FakeGroupsContext): ControlPlaneServices['groups'] {
  const { id, now, runs, own, createRun } = ctx;
  const groups = new Map<string, GroupView>();
  const rollup = (g: GroupView): GroupView => {
    const byStatus: Record<string, number> = {};
    for (const rid of g.runIds) {
      const s = runs.get(rid)?.status ?? 'queued';
      byStatus[s] = (byStatus[s] ?? 0) + 1;
    }
    const done = g.runIds.every((rid) => TERMINAL.has(runs.get(rid)?.status ?? ''));
    return {
      ...g,
      rollup: {
        total: g.runIds.length,
        byStatus,
        status: g.runIds.length === 0 ? 'empty' : done ? 'succeeded' : 'running',
        usage: NO_USAGE,
      },
    };
  };
  return {
    async create(p, raw) {
      const input = CreateGroupInput.parse(raw);
      const gid = id('grp');
      const n = input.cases?.length ?? input.repeat ?? 1;
      const made = Array.from({ length: n }, () => createRun(p, input.spec, undefined, gid));
      const t = now();
      const g: GroupView = {
        id: gid,
        tenantId: p.tenantId,
        kind: input.kind,
        label: input.label,
        spec: input.spec,
        runIds: made.map((r) => r.id),
        rollup: { total: 0, byStatus: {}, status: 'empty', usage: NO_USAGE },
        scoring: null,
        createdBy: p.actor,
        createdAt: t,
        updatedAt: t,
      };
      groups.set(gid, g);
      return { group: rollup(g), runs: made };
    },
    async get(p, gid) {
      return rollup(own(groups, p, gid, 'group'));
    },
    async list(p) {
      return {
        items: [...groups.values()].filter((g) => g.tenantId === p.tenantId).map(rollup),
        nextCursor: null,
      };
    },
    async score(p, gid, raw) {
      const g = own(groups, p, gid, 'group');
      const input = ScoreGroupInput.parse(raw);
      let n = 0;
      // The real vocabulary's graders over the fake's runs (deterministic ones; no judge here).
      const result = applyGraders({
        group: { id: gid, runIds: g.runIds },
        runs: g.runIds.flatMap((rid) => {
          const r = runs.get(rid);
          return r ? [r] : [];
        }),
        graders: input.graders,
        ids: () => id(n++ === 0 ? 'scoring' : 'score'),
        now: now(),
        ...(input.rescoreOf ? { rescoreOf: input.rescoreOf } : {}),
      });
      g.scoring = result.scoring;
      return result;
    },
    async promote(p, gid, input) {
      const g = own(groups, p, gid, 'group');
      if (g.kind !== 'experiment')
        throw new ControlPlaneError('conflict', 'only an experiment can be promoted');
      g.kind = 'scorecard';
      await this.score(p, gid, input);
      return rollup(g);
    },
    async cancel(p, gid) {
      own(groups, p, gid, 'group'); // cancels nothing here: the real cancel is tested on the real core
      return { group: rollup(own(groups, p, gid, 'group')), cancelled: [] };
    },
  };
}
