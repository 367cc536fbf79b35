// The activity console: every run of the tenant, live. State is a map of runs and groups kept current by
// the tenant feed (`GET /console/feed`, SSE over fetch); a fact about a run re-reads that run. Keyboard:
// j/k or arrows move, Enter opens, Esc closes, / filters, n submits a run.
import { createDetail } from '/console/assets/detail.js';
import { ApiError, api, follow } from '/console/assets/live.js';
import { createNewRun } from '/console/assets/new-run.js';
import { createRows } from '/console/assets/rows.js';
import { envelopesView, esc, queueView, runnersView } from '/console/assets/views.js';

const $ = (id) => document.getElementById(id);
const KEY = 'everdict.key';
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
  /** Runs dropped to keep MAX_RUNS (rows.js; the count says so). */
  pruned: false,
  timers: [],
  /** The key was refused (revoked): everything stopped, the notice says so. */
  refused: false,
};
// ---- the row list (rows.js) ----
const { prune, render, tick, paintSessions } = createRows(state);

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
/** Flushes under way (each runs on its own): `data-flushing` on <body>, 0 when the page has all it asked for. */
let flushing = 0;
/** A re-read answer older than what the page holds (two re-reads of one run can answer out of order). */
const older = (run, held) => held !== undefined && Date.parse(run.updatedAt) < Date.parse(held.updatedAt);
async function flush() {
  document.body.dataset.flushing = String(++flushing);
  try {
    await flushRuns();
  } finally {
    document.body.dataset.flushing = String(--flushing);
  }
}
async function flushRuns() {
  flushTimer = null;
  const ids = [...pendingRuns];
  pendingRuns.clear();
  await Promise.all(
    ids.map(async (id) => {
      try {
        const run = await state.conn.call('GET', `/runs/${encodeURIComponent(id)}`);
        if (older(run, state.runs.get(id))) return; // a later re-read already answered: kept
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

// ---- the detail pane (detail.js) ----
const { openRun, renderDetailHead, closeDetail } = createDetail({ state, render, keyRefused, isRefusal });

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

// ---- submitting a run (new-run.js; a refusal is shown as the problem the API answered) ----
const openNewRun = createNewRun({ state, render, touchRun });

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
