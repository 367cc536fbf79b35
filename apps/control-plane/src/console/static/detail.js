// The run detail pane: a run's head, causal tree, record verdict, facts and trajectory (both live), and for a
// held-open session a terminal. `createDetail` is given the console's state and the few console functions it
// calls back (the row list's render, the refused-key stop), so this module imports nothing from console.js.
import { ApiError, errorEvent } from '/console/assets/live.js';
import { openTerminal } from '/console/assets/terminal.js';
import {
  clock,
  countdown,
  esc,
  isSession,
  statusBadge,
  terminalDecoder,
  treeView,
  verdictView,
} from '/console/assets/views.js';

const $ = (id) => document.getElementById(id);
/** Lines a facts/trajectory pane keeps. */
const MAX_LOG_LINES = 400;

/** One line into a facts/trajectory pane, which keeps its last MAX_LOG_LINES. */
function appendLine(out, line) {
  out.append(`${line}\n`);
  while (out.childNodes.length > MAX_LOG_LINES) out.firstChild.remove();
  out.scrollTop = out.scrollHeight;
}

/** The detail pane over `state` (conn, runs, selected, keys, detailAbort, terminal). */
export function createDetail({ state, render, keyRefused, isRefusal }) {
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
    let ended = false;
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
            ended = true;
            // sealed: the store sealed it; ended: the run ended with no event; limit: the stream's cap
            const why = JSON.parse(e.data).status;
            status.textContent =
              why === 'ended'
                ? 'no trajectory recorded'
                : why === 'limit'
                  ? 'stream limit reached'
                  : 'sealed';
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
      if (!ended && !signal.aborted) status.textContent = 'disconnected';
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

  return { openRun, renderDetailHead, closeDetail };
}
