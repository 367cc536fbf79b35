// The row list: the tenant's runs and groups as rows (a group collapses into one; a filter narrows them), the
// pruning that keeps a long session's page small, and the sessions' TTL, idle countdowns and burn. `createRows`
// is given the console's state, so this module imports nothing from console.js.
import { burnLine, countdown, groupRow, runRow, sessionLine } from '/console/assets/views.js';

const $ = (id) => document.getElementById(id);
/** What a long session keeps: the newest runs and groups (by creation). */
const MAX_RUNS = 500;
const MAX_GROUPS = 100;

/** The row list over `state` (runs, groups, expanded, selected, filter, sessions, pruned). */
export function createRows(state) {
  /** Keeps the newest MAX_RUNS runs and MAX_GROUPS groups (and the open one): a busy tenant's page stays small. */
  function prune() {
    const newestFirst = (a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0);
    if (state.runs.size > MAX_RUNS) {
      const keep = new Set(
        [...state.runs.values()]
          .sort(newestFirst)
          .slice(0, MAX_RUNS)
          .map((r) => r.id),
      );
      for (const id of state.runs.keys()) if (!keep.has(id) && id !== state.selected) state.runs.delete(id);
      state.pruned = true;
    }
    if (state.groups.size > MAX_GROUPS) {
      const keep = new Set(
        [...state.groups.values()]
          .sort(newestFirst)
          .slice(0, MAX_GROUPS)
          .map((g) => g.id),
      );
      for (const id of state.groups.keys()) if (!keep.has(id)) state.groups.delete(id);
    }
  }

  function matches(run) {
    if (!state.filter) return true;
    const f = state.filter.toLowerCase();
    return [run.id, run.kind, run.status, run.lifetime].some((x) => String(x).toLowerCase().includes(f));
  }

  function render() {
    const inGroup = new Map();
    for (const g of state.groups.values()) for (const id of g.runIds) inGroup.set(id, g.id);
    const items = [];
    const seenGroups = new Set();
    const runs = [...state.runs.values()].sort((a, b) => (a.createdAt < b.createdAt ? 1 : -1));
    for (const run of runs) {
      const gid = inGroup.get(run.id);
      if (gid) {
        if (seenGroups.has(gid)) continue;
        seenGroups.add(gid);
        const g = state.groups.get(gid);
        const members = g.runIds.map((id) => state.runs.get(id)).filter(Boolean);
        if (!members.some(matches) && !(g.label || '').toLowerCase().includes(state.filter.toLowerCase()))
          continue;
        // A filter narrows an expanded group to its matching runs (all of them when only its label matches).
        const shown = members.filter(matches);
        items.push(groupRow(g, shown.length ? shown : members, state.expanded.has(gid), state.selected));
      } else if (matches(run)) items.push(runRow(run, state.selected));
    }
    const focused = document.activeElement?.dataset;
    const focusKey = focused?.run
      ? `[data-run="${focused.run}"]`
      : focused?.group
        ? `[data-group="${focused.group}"]`
        : null;
    $('rows').innerHTML = items.join('');
    $('count').textContent = state.pruned ? `(newest ${state.runs.size})` : `(${state.runs.size})`;
    paintSessions();
    if (focusKey) document.querySelector(focusKey)?.focus();
  }

  function tick() {
    for (const el of document.querySelectorAll('[data-expires]'))
      el.textContent = `ttl ${countdown(el.dataset.expires)}`;
    paintSessions();
  }

  /** The sessions' idle countdowns and burn, in their rows and the open detail (from `state.sessions`). */
  function paintSessions() {
    for (const el of document.querySelectorAll('[data-burn]')) {
      const s = state.sessions.get(el.dataset.burn);
      el.textContent = s ? burnLine(s) : '';
    }
    const d = $('d-session');
    if (d) {
      const s = state.sessions.get(state.selected);
      $('d-session-section').hidden = !s;
      d.textContent = s ? sessionLine(s) : '';
    }
  }

  return { prune, render, tick, paintSessions };
}
