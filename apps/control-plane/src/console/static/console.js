// The activity console: every run of the tenant, live. State is a map of runs and groups kept current by
// the tenant feed (`GET /console/feed`, SSE over fetch); a fact about a run re-reads that run. Keyboard:
// j/k or arrows move, Enter opens, Esc closes, / filters, n submits a run.
import { ApiError, api, errorEvent, follow } from '/console/assets/live.js';
import { openTerminal } from '/console/assets/terminal.js';
import {
  burnLine,
  clock,
  countdown,
  envelopesView,
  esc,
  groupRow,
  isSession,
  queueView,
  runnersView,
  runRow,
  sessionLine,
  statusBadge,
  terminalDecoder,
  treeView,
  verdictView,
} from '/console/assets/views.js';

const $ = (id) => document.getElementById(id);
const KEY = 'everdict.key';
/** What a long session keeps: the newest runs and groups (by creation), and lines of a facts/trajectory pane. */
const MAX_RUNS = 500;
const MAX_GROUPS = 100;
const MAX_LOG_LINES = 400;
const state = {
  conn: null,
  runs: new Map(),
  groups: new Map(),
  expanded: new Set(),
  selected: null,
  keys: [],
  feedAbort: null,
  detailAbort: null,
  terminal: null,
  filter: '',
  /** The tenant's open and parked sessions (`GET /sandboxes`): idle deadlines and burn, by run id. */
  sessions: new Map(),
  /** Runs dropped to keep MAX_RUNS (the count says so). */
  pruned: false,
  timers: [],
  /** The key was refused (revoked): everything stopped, the notice says so. */
  refused: false,
};

function setConn(text, live) {
  $('conn').textContent = text;
  $('conn').classList.toggle('live', Boolean(live));
}

const explain = (e) =>
  e instanceof ApiError ? `${e.status} ${e.code}: ${e.message}` : String(e?.message ?? e);

/** A failure the operator must see (a load that failed, a refused key), above the runs. */
function notice(text) {
  $('notice').textContent = text;
  $('notice').hidden = !text;
}

/**
 * The key stopped authenticating (revoked: the feed's `error` event, or a 401): stop the feed, the detail's
 * streams and the refreshes — retrying cannot succeed — and say so.
 */
function keyRefused(err) {
  if (state.refused) return;
  state.refused = true;
  state.feedAbort?.abort(); // the detail's streams end with their own `error` event
  for (const t of state.timers) clearInterval(t);
  state.timers = [];
  setConn('key refused', false);
  notice(
    `The API key was refused (${explain(err)}). Live updates stopped; forget the key and connect with a valid one.`,
  );
}
const isRefusal = (e) => e instanceof ApiError && e.status === 401;

// ---- login ----
async function connect(key) {
  const conn = api(key);
  await conn.call('GET', '/runs?limit=1'); // 401 → ApiError
  sessionStorage.setItem(KEY, key);
  $('key').value = '';
  state.conn = conn;
  $('login').hidden = true;
  $('app').hidden = false;
  $('new-run-open').hidden = false;
  $('forget').hidden = false;
  // The feed first, the lists once it is subscribed: a run created in between is in the list or in the feed.
  await new Promise((settle) => startFeed(settle));
  if (state.refused) return;
  state.timers.push(
    setInterval(tick, 1000),
    setInterval(() => refreshSide().catch(() => undefined), 5000),
  );
}

$('login-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  $('login-error').hidden = true;
  try {
    await connect($('key').value.trim());
  } catch (err) {
    $('login-error').textContent = explain(err);
    $('login-error').hidden = false;
  }
});
$('forget').addEventListener('click', () => {
  state.feedAbort?.abort();
  sessionStorage.removeItem(KEY);
  location.reload();
});

// ---- data ----
async function loadAll() {
  const [runs, groups, keys] = await Promise.all([
    state.conn.call('GET', '/runs?limit=200'),
    state.conn.call('GET', '/groups?limit=50'),
    fetch('/keys').then((r) => r.json()),
  ]);
  for (const r of runs.items) state.runs.set(r.id, r);
  for (const g of groups.items) state.groups.set(g.id, g);
  state.keys = keys.keys ?? [];
  prune();
  render();
  await refreshSide();
}

async function refreshSide() {
  const [queue, envelopes, runners, sessions] = await Promise.all([
    state.conn.call('GET', '/tenant/queue').catch((e) => ({ error: e })),
    state.conn.call('GET', '/envelopes').catch((e) => ({ error: e })),
    state.conn.call('GET', '/runners').catch((e) => ({ error: e })),
    state.conn.call('GET', '/sandboxes').catch(() => ({ items: [] })),
  ]);
  const refusal = [queue, envelopes, runners].find((x) => isRefusal(x.error));
  if (refusal) return keyRefused(refusal.error);
  state.sessions = new Map(sessions.items.map((s) => [s.id, s]));
  paintSessions();
  $('queue').innerHTML = queue.error ? `<p class="muted">${esc(queue.error.code)}</p>` : queueView(queue);
  $('envelopes').innerHTML = envelopes.error
    ? `<p class="muted">${esc(envelopes.error.code)}</p>`
    : envelopesView(envelopes.items);
  $('runners').innerHTML = runners.error
    ? `<p class="muted">${esc(runners.error.code)}</p>`
    : runnersView(runners.items);
}

const pendingRuns = new Set();
let flushTimer = null;
let groupsDirty = false;
let sideDirty = false;
function touchRun(id) {
  if (state.refused) return;
  pendingRuns.add(id);
  if (flushTimer === null) flushTimer = setTimeout(flush, 150);
}
async function flush() {
  flushTimer = null;
  const ids = [...pendingRuns];
  pendingRuns.clear();
  await Promise.all(
    ids.map(async (id) => {
      try {
        const run = await state.conn.call('GET', `/runs/${encodeURIComponent(id)}`);
        const fresh = !state.runs.has(id);
        state.runs.set(id, run);
        if (fresh && !groupOf(id)) groupsDirty = true;
      } catch (e) {
        if (isRefusal(e)) keyRefused(e); // else gone or not ours
      }
    }),
  );
  if (groupsDirty) {
    groupsDirty = false;
    const groups = await state.conn.call('GET', '/groups?limit=50').catch(() => ({ items: [] }));
    for (const g of groups.items) state.groups.set(g.id, g);
  } else {
    // Refresh the rollups of the groups these runs belong to.
    const touched = new Set(ids.map(groupOf).filter(Boolean));
    await Promise.all(
      [...touched].map(async (gid) => {
        const g = await state.conn.call('GET', `/groups/${encodeURIComponent(gid)}`).catch(() => null);
        if (g) state.groups.set(g.id, g);
      }),
    );
  }
  if (sideDirty) {
    sideDirty = false;
    refreshSide().catch(() => undefined);
  }
  prune();
  render();
  if (state.selected && ids.includes(state.selected)) renderDetailHead();
}

function groupOf(runId) {
  for (const g of state.groups.values()) if (g.runIds.includes(runId)) return g.id;
  return null;
}

// ---- the live feed ----
/**
 * Follows `GET /console/feed` (live.js `follow`: backoff, resumes after the last event id). Whenever it
 * subscribes afresh (no event seen yet: it starts at "now") the lists are read once it is `ready`, so nothing
 * created before the subscription is missed (not ready within 3 s, they are read anyway, and again on `ready`).
 * `settle` is called once the page has its lists (or could not).
 */
function startFeed(settle) {
  state.feedAbort = new AbortController();
  let loaded = false;
  const load = () =>
    loadAll()
      .then(() => state.refused || notice(''))
      .catch((e) => (isRefusal(e) ? keyRefused(e) : notice(`Could not load the runs: ${explain(e)}`)))
      .finally(() => {
        loaded = true;
        settle();
      });
  // A feed whose `ready` never comes (a proxy buffering the stream) must not leave the page empty.
  const fallback = setTimeout(() => loaded || load(), 3000);
  state.feedAbort.signal.addEventListener('abort', () => clearTimeout(fallback), { once: true });
  follow(
    state.conn,
    '/console/feed',
    {
      onReady(fresh) {
        setConn('live', true);
        if (fresh || !loaded) load();
      },
      onEvent(e) {
        const fact = JSON.parse(e.data);
        const runId = fact.runId ?? fact.data?.runId;
        if (runId) touchRun(runId);
        if (String(fact.kind).startsWith('group.')) groupsDirty = true;
        sideDirty = true;
      },
      onRetry(ms, reason) {
        setConn(`reconnecting in ${Math.ceil(ms / 1000)} s (${reason})`, false);
        if (!loaded) load(); // show what there is meanwhile
      },
      onStop(err) {
        keyRefused(err);
        settle();
      },
    },
    state.feedAbort.signal,
  );
}

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

/** One line into a facts/trajectory pane, which keeps its last MAX_LOG_LINES. */
function appendLine(out, line) {
  out.append(`${line}\n`);
  while (out.childNodes.length > MAX_LOG_LINES) out.firstChild.remove();
  out.scrollTop = out.scrollHeight;
}

// ---- rendering ----
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

// ---- the detail pane ----
async function openRun(id) {
  state.selected = id;
  state.detailAbort?.abort();
  state.terminal?.close();
  state.terminal = null;
  state.detailAbort = new AbortController();
  const d = $('detail');
  d.hidden = false;
  d.innerHTML = `<div id="d-head"></div>
    <section id="d-session-section" hidden><h3>Session</h3><p id="d-session" class="mono"></p></section>
    <section id="d-term-section" hidden><h3>Terminal <span class="muted" id="d-term-state"></span></h3>
      <button type="button" id="d-term-open">Open terminal</button><div id="d-term" class="terminal"></div></section>
    <section><h3>Causal tree</h3><ul class="tree" id="d-tree"><li class="muted">…</li></ul></section>
    <section><h3>Record</h3><div id="d-record"><p class="muted">verifying…</p></div></section>
    <section><h3>Trajectory <span class="muted" id="d-traj-state"></span></h3><pre id="d-traj" class="log" aria-live="polite"></pre></section>
    <section><h3>Facts</h3><pre id="d-facts" class="log"></pre></section>`;
  if (!state.runs.has(id)) {
    const run = await state.conn.call('GET', `/runs/${encodeURIComponent(id)}`).catch(() => null);
    if (run) state.runs.set(id, run);
  }
  render();
  renderDetailHead();
  const signal = state.detailAbort.signal;
  loadTree(id).catch((e) => ($('d-tree').innerHTML = `<li class="error">${esc(e.message)}</li>`));
  loadRecord(id).catch(
    (e) => ($('d-record').innerHTML = `<p class="error">${esc(e.code ?? '')} ${esc(e.message)}</p>`),
  );
  loadFacts(id, signal);
  loadTrajectory(id, signal);
  const run = state.runs.get(id);
  if (run && isSession(run)) {
    $('d-term-section').hidden = false;
    $('d-term-open').addEventListener('click', async () => {
      $('d-term-open').hidden = true;
      try {
        state.terminal = await openTerminal(
          $('d-term'),
          id,
          state.conn,
          (s) => ($('d-term-state').textContent = s),
        );
      } catch (e) {
        $('d-term-state').textContent =
          e instanceof ApiError && e.code === 'route_not_found'
            ? 'this control plane has no terminal route'
            : `${e.code ?? ''} ${e.message}`;
      }
    });
  }
  $('d-close')?.focus();
}

function renderDetailHead() {
  const run = state.runs.get(state.selected);
  if (!run || !$('d-head')) return;
  const session = isSession(run);
  $('d-head').innerHTML = `<div class="runs-head"><h2 class="mono">${esc(run.id)}</h2>
      <button type="button" id="d-close" aria-label="close detail">Close <kbd>Esc</kbd></button></div>
    <dl>
      <dt>status</dt><dd>${statusBadge(run.status)}${session ? ' <span class="badge session">held open</span>' : ''}</dd>
      <dt>kind</dt><dd>${esc(run.kind)} · ${esc(run.lifetime)} · ${esc(run.class)}</dd>
      ${session && run.expiresAt ? `<dt>expires</dt><dd data-expires="${esc(run.expiresAt)}">ttl ${esc(countdown(run.expiresAt))}</dd>` : ''}
      <dt>created</dt><dd>${esc(run.createdAt)}${run.origin?.cause ? ` · cause ${esc(run.origin.cause)}` : ''}</dd>
      ${run.outputs?.summary ? `<dt>summary</dt><dd>${esc(run.outputs.summary)}</dd>` : ''}
      ${run.error ? `<dt>error</dt><dd class="error">${esc(run.error.code ?? '')} ${esc(run.error.message ?? JSON.stringify(run.error))}</dd>` : ''}
      ${run.usage?.costUsd ? `<dt>cost</dt><dd>$${esc(run.usage.costUsd)}</dd>` : ''}
    </dl>`;
  $('d-close').addEventListener('click', closeDetail);
}

function closeDetail() {
  const id = state.selected;
  state.selected = null;
  state.detailAbort?.abort();
  state.terminal?.close();
  state.terminal = null;
  $('detail').hidden = true;
  render();
  if (id) document.querySelector(`[data-run="${id}"]`)?.focus();
}

async function loadTree(id) {
  // Up to the root through origin.causedByRunId, then down through ?causedBy= (three levels).
  let root = state.runs.get(id) ?? (await state.conn.call('GET', `/runs/${encodeURIComponent(id)}`));
  for (let i = 0; i < 8 && root.origin?.causedByRunId; i++) {
    const up = await state.conn
      .call('GET', `/runs/${encodeURIComponent(root.origin.causedByRunId)}`)
      .catch(() => null);
    if (!up) break;
    root = up;
  }
  const build = async (run, depth) => {
    const node = { id: run.id, kind: run.kind, status: run.status, children: [] };
    if (depth < 3) {
      const page = await state.conn.call('GET', `/runs?causedBy=${encodeURIComponent(run.id)}&limit=50`);
      node.children = await Promise.all(page.items.map((c) => build(c, depth + 1)));
    }
    return node;
  };
  const tree = await build(root, 0);
  if (state.selected === id) $('d-tree').innerHTML = treeView(tree, id);
}

async function loadRecord(id) {
  const rec = await state.conn.call('GET', `/runs/${encodeURIComponent(id)}/record`);
  if (state.selected === id) $('d-record').innerHTML = verdictView(rec.verify, state.keys);
}

/** A detail stream's end that is not a settled run's `end`: the key refused, or the stream cut. */
function streamFailure(e, signal) {
  if (signal.aborted) return null; // the pane was closed
  if (isRefusal(e)) keyRefused(e);
  return e instanceof ApiError ? `${e.code}: ${e.message}` : `disconnected: ${e?.message ?? e}`;
}

async function loadFacts(id, signal) {
  const out = $('d-facts');
  try {
    await state.conn.stream(
      `/runs/${encodeURIComponent(id)}/events`,
      (e) => {
        if (e.event === 'end') return;
        if (e.event === 'error') throw errorEvent(e);
        const f = JSON.parse(e.data);
        appendLine(out, `${clock(f.at)} ${f.kind}`);
      },
      signal,
    );
  } catch (e) {
    const why = streamFailure(e, signal);
    if (why) appendLine(out, `(${why})`);
  }
}

async function loadTrajectory(id, signal) {
  const out = $('d-traj');
  const status = $('d-traj-state');
  const terminalBytes = terminalDecoder();
  status.textContent = 'live';
  let n = 0;
  let sealed = false;
  const settledGrace = setInterval(() => {
    const run = state.runs.get(id);
    if (run && ['succeeded', 'failed', 'cancelled'].includes(run.status) && n === 0) {
      status.textContent = 'no trajectory recorded';
    }
  }, 2000);
  try {
    await state.conn.stream(
      `/runs/${encodeURIComponent(id)}/trajectory/stream`,
      (e) => {
        if (e.event === 'end') {
          sealed = true;
          status.textContent = 'sealed';
          return;
        }
        if (e.event === 'error') throw errorEvent(e);
        if (e.event !== 'trajectory.event') return;
        n++;
        const ev = JSON.parse(e.data);
        const { type, ts, ...rest } = ev;
        const text = terminalBytes(ev) ?? JSON.stringify(rest);
        appendLine(
          out,
          `${String(e.id).padStart(4)} ${type} ${text.length > 300 ? `${text.slice(0, 297)}…` : text}`,
        );
      },
      signal,
    );
    if (!sealed && !signal.aborted) status.textContent = 'disconnected';
  } catch (e) {
    if (e.code === 'not_found') status.textContent = 'no trajectory';
    else {
      const why = streamFailure(e, signal);
      if (why) status.textContent = why;
    }
  } finally {
    clearInterval(settledGrace);
  }
}

// ---- interactions ----
$('rows').addEventListener('click', (e) => {
  const btn = e.target.closest('button');
  if (!btn) return;
  if (btn.dataset.group) {
    const gid = btn.dataset.group;
    if (state.expanded.has(gid)) state.expanded.delete(gid);
    else state.expanded.add(gid);
    render();
    document.querySelector(`[data-group="${gid}"]`)?.focus();
  } else if (btn.dataset.run) openRun(btn.dataset.run);
});
$('detail').addEventListener('click', (e) => {
  const b = e.target.closest('button[data-open]');
  if (b) openRun(b.dataset.open);
});
$('filter').addEventListener('input', (e) => {
  state.filter = e.target.value;
  render();
});

function moveFocus(delta) {
  const rows = [...document.querySelectorAll('#rows .row')];
  if (!rows.length) return;
  const i = rows.indexOf(document.activeElement);
  const next = rows[Math.max(0, Math.min(rows.length - 1, i < 0 ? 0 : i + delta))];
  next.focus();
}

document.addEventListener('keydown', (e) => {
  const typing = ['INPUT', 'TEXTAREA', 'SELECT'].includes(document.activeElement?.tagName);
  if (e.key === 'Escape') {
    if ($('new-run').open) return; // the dialog closes itself
    if (document.activeElement === $('filter')) {
      // Esc leaves the filter and clears it (as a search box does natively, but here the rows follow).
      $('filter').value = '';
      state.filter = '';
      render();
    }
    if (typing) return document.activeElement.blur();
    if (state.selected) return closeDetail();
  }
  if (typing || e.ctrlKey || e.metaKey || e.altKey || !state.conn) return;
  if (e.key === 'j' || e.key === 'ArrowDown') {
    e.preventDefault();
    moveFocus(1);
  } else if (e.key === 'k' || e.key === 'ArrowUp') {
    e.preventDefault();
    moveFocus(-1);
  } else if (e.key === '/') {
    e.preventDefault();
    $('filter').focus();
  } else if (e.key === 'n') {
    e.preventDefault();
    openNewRun();
  }
});

// ---- submitting a run (a refusal is shown as the problem the API answered) ----
function openNewRun() {
  $('nr-refusal').hidden = true;
  $('new-run').showModal();
  $('nr-kind').focus();
}
$('new-run-open').addEventListener('click', openNewRun);
$('nr-cancel').addEventListener('click', () => $('new-run').close());
$('new-run-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const refusal = $('nr-refusal');
  refusal.hidden = true;
  let body;
  try {
    body = {
      kind: $('nr-kind').value,
      subject: JSON.parse($('nr-subject').value || '{}'),
      ...JSON.parse($('nr-extra').value || '{}'),
    };
  } catch (err) {
    refusal.textContent = `not JSON: ${err.message}`;
    refusal.hidden = false;
    return;
  }
  const causedBy = $('nr-caused-by').value.trim();
  try {
    const created = await state.conn.call(
      'POST',
      '/runs',
      body,
      causedBy ? { 'x-everdict-caused-by': causedBy } : {},
    );
    state.runs.set(created.run.id, created.run);
    $('new-run').close();
    render();
    touchRun(created.run.id);
  } catch (err) {
    const p = err.problem ?? {};
    refusal.textContent = `refused ${err.status} ${err.code}${p.rule ? ` (rule ${p.rule})` : ''}: ${err.message}`;
    refusal.dataset.status = String(err.status);
    refusal.dataset.code = err.code;
    refusal.hidden = false;
  }
});

// ---- start ----
// A saved key that is refused is forgotten; one that could not be tried (the control plane unreachable) is kept
// for a reload. Either way the login says why.
const saved = sessionStorage.getItem(KEY);
if (saved)
  connect(saved).catch((err) => {
    if (isRefusal(err)) sessionStorage.removeItem(KEY);
    $('login-error').textContent = explain(err);
    $('login-error').hidden = false;
  });
