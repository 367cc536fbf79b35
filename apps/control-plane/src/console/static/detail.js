// The run detail pane: a run's head, its scores (each verdict with why), causal tree, record verdict, facts and
// trajectory (both live), and for a held-open session a terminal. `createDetail` is given the console's state and the few console functions it
// calls back (the row list's render, the refused-key stop), so this module imports nothing from console.js.
import { ApiError, backoff, errorEvent, sleep } from '/console/assets/live.js';
import { openTerminal } from '/console/assets/terminal.js';
import {
  artifactsView,
  clock,
  countdown,
  esc,
  isSession,
  scoresView,
  statusBadge,
  terminalDecoder,
  treeView,
  verdictView,
} from '/console/assets/views.js';

const $ = (id) => document.getElementById(id);
/** Lines a facts/trajectory pane keeps. */
const MAX_LOG_LINES = 400;

/** Lines waiting for the next frame, by pane. */
const pendingLines = new WeakMap();

/**
 * One line into a facts/trajectory pane, which keeps its last MAX_LOG_LINES. Lines are written once a frame
 * (one layout, one scroll), so a stream of thousands of events does not stall the page.
 */
function appendLine(out, line) {
  let lines = pendingLines.get(out);
  if (!lines) {
    lines = [];
    pendingLines.set(out, lines);
    requestAnimationFrame(() => writeLines(out));
  }
  lines.push(`${line}\n`);
  if (lines.length > MAX_LOG_LINES) lines.shift();
}

function writeLines(out) {
  const lines = pendingLines.get(out) ?? [];
  pendingLines.delete(out);
  out.append(...lines);
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
      <section id="d-scores-section" hidden><h3>Scores</h3><div id="d-scores"></div></section>
      <section id="d-artifacts-section" hidden><h3>Artifacts <span class="muted" id="d-artifacts-state"></span></h3><div id="d-artifacts"></div></section>
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
    loadScores(id).catch((e) => {
      $('d-scores-section').hidden = false;
      $('d-scores').innerHTML = `<p class="error">${esc(e.code ?? '')} ${esc(e.message)}</p>`;
    });
    loadArtifacts(id).catch((e) => {
      $('d-artifacts-section').hidden = false;
      $('d-artifacts').innerHTML = `<p class="error">${esc(e.code ?? '')} ${esc(e.message)}</p>`;
    });
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

  async function loadScores(id) {
    // Shown once a run has verdicts (a group's scoring); a run never scored shows no section.
    const { scores } = await state.conn.call('GET', `/runs/${encodeURIComponent(id)}/scores`);
    if (state.selected !== id || scores.length === 0) return;
    $('d-scores').innerHTML = scoresView(scores);
    $('d-scores-section').hidden = false;
  }

  /**
   * The run's artifacts (a settled run's `outputs.artifacts`, read afresh: the row's copy may predate the
   * settle); a button downloads one (with the key), another all of them as the run's archive.
   */
  async function loadArtifacts(id) {
    const run = await state.conn.call('GET', `/runs/${encodeURIComponent(id)}`);
    const artifacts = run?.outputs?.artifacts ?? [];
    if (state.selected !== id || artifacts.length === 0) return;
    $('d-artifacts').innerHTML = artifactsView(artifacts);
    $('d-artifacts-section').hidden = false;
    $('d-artifacts').addEventListener('click', async (e) => {
      const archive = e.target.closest?.('[data-archive]');
      const name = e.target.closest?.('[data-artifact]')?.dataset.artifact;
      if (!archive && !name) return;
      const what = archive ? `${id}-artifacts.tar` : name.slice(name.lastIndexOf('/') + 1);
      $('d-artifacts-state').textContent = `downloading ${archive ? 'all' : name}…`;
      try {
        const path = archive
          ? `/runs/${encodeURIComponent(id)}/artifacts.tar`
          : `/runs/${encodeURIComponent(id)}/artifact?path=${encodeURIComponent(name)}`;
        const url = URL.createObjectURL(await state.conn.blob(path));
        const a = document.createElement('a');
        a.href = url;
        a.download = what;
        a.click();
        setTimeout(() => URL.revokeObjectURL(url), 60_000);
        $('d-artifacts-state').textContent = '';
      } catch (err) {
        $('d-artifacts-state').textContent = `${err.code ?? ''} ${err.message}`;
      }
    });
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

  /**
   * A failure a detail stream is reopened after (no answer, a 5xx, 429, the stream cut); a refusal (4xx, the
   * key refused included) is final.
   */
  const retryable = (e) => !(e instanceof ApiError) || e.status === 0 || e.status >= 500 || e.status === 429;

  /**
   * Follows one detail stream until it ends for good or the pane closes: `open(good)` reads one connection from
   * where the last one stopped (calling `good()` on each event: the backoff starts over) and answers how it
   * ended (`'end'`, `'next'`: reopen at once, undefined: cut). A cut or retryable failure
   * is reopened after `backoff` from where it stopped; `onRetry(ms, why)` before each wait. Answers the
   * final failure (shown by the caller), or null.
   */
  async function reopening(signal, open, onRetry) {
    let attempt = 0;
    while (!signal.aborted) {
      let ended;
      let why = 'disconnected';
      try {
        ended = await open(() => {
          attempt = 0;
        });
      } catch (e) {
        if (signal.aborted) return null;
        if (!retryable(e)) return e;
        why = e instanceof ApiError ? `${e.code}: ${e.message}` : `disconnected: ${e?.message ?? e}`;
      }
      if (ended === 'end' || signal.aborted) return null;
      if (ended === 'next') continue;
      const ms = backoff(attempt++);
      onRetry(ms, why);
      await sleep(ms, signal);
    }
    return null;
  }

  /** The run's facts; a cut stream is reopened after the last fact shown (`after`: nothing twice). */
  async function loadFacts(id, signal) {
    const out = $('d-facts');
    let after;
    const failure = await reopening(
      signal,
      async (good) => {
        let ended;
        const q = after === undefined ? '' : `?after=${encodeURIComponent(after)}`;
        await state.conn.stream(
          `/runs/${encodeURIComponent(id)}/events${q}`,
          (e) => {
            if (e.event === 'end') {
              ended = 'end';
              return;
            }
            if (e.event === 'error') throw errorEvent(e);
            good();
            if (e.id) after = e.id;
            const f = JSON.parse(e.data);
            appendLine(out, `${clock(f.at)} ${f.kind}`);
          },
          signal,
        );
        return ended;
      },
      (ms, why) => appendLine(out, `(${why}; reconnecting in ${Math.ceil(ms / 1000)} s)`),
    );
    const why = failure && streamFailure(failure, signal);
    if (why) appendLine(out, `(${why})`);
  }

  /**
   * The run's trajectory, live. The stream ends after a page of events (`end` `{status: "limit"}`) and may be
   * cut: either way it is reopened after the last event shown (`offset`), so a long run stays live to its end.
   */
  async function loadTrajectory(id, signal) {
    const out = $('d-traj');
    const status = $('d-traj-state');
    const terminalBytes = terminalDecoder();
    status.textContent = 'live';
    let n = 0;
    let offset = 0;
    const settledGrace = setInterval(() => {
      const run = state.runs.get(id);
      if (run && ['succeeded', 'failed', 'cancelled'].includes(run.status) && n === 0) {
        status.textContent = 'no trajectory recorded';
      }
    }, 2000);
    try {
      const failure = await reopening(
        signal,
        async (good) => {
          let ended;
          await state.conn.stream(
            `/runs/${encodeURIComponent(id)}/trajectory/stream?offset=${offset}`,
            (e) => {
              if (e.event === 'end') {
                // sealed: the store sealed it; ended: the run ended with no event; limit: one page sent
                const why = JSON.parse(e.data).status;
                if (why === 'limit') {
                  ended = 'next';
                  return;
                }
                ended = 'end';
                status.textContent = why === 'ended' ? 'no trajectory recorded' : 'sealed';
                return;
              }
              if (e.event === 'error') throw errorEvent(e);
              if (e.event !== 'trajectory.event') return;
              good();
              if (status.textContent !== 'live') status.textContent = 'live';
              n++;
              if (/^\d+$/.test(String(e.id))) offset = Number(e.id) + 1;
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
          return ended;
        },
        (ms, why) => (status.textContent = `${why}; reconnecting in ${Math.ceil(ms / 1000)} s`),
      );
      if (failure?.code === 'not_found') status.textContent = 'no trajectory';
      else {
        const why = failure && streamFailure(failure, signal);
        if (why) status.textContent = why;
      }
    } finally {
      clearInterval(settledGrace);
    }
  }

  return { openRun, renderDetailHead, closeDetail };
}
