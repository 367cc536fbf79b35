// Rendering: every run of every kind as one row shape with a uniform status badge; groups and conversations
// as one expandable row (rollup, scores); held-open sessions as healthy sessions with a TTL countdown.

export const esc = (s) =>
  String(s ?? '').replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c],
  );

export function ago(iso, now = Date.now()) {
  if (!iso) return '';
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

/** An ISO time as the viewer's local wall-clock time, `HH:MM:SS.mmm` ('' when it is not a time). */
export function clock(iso) {
  const d = new Date(iso ?? Number.NaN);
  if (Number.isNaN(d.getTime())) return '';
  const p = (n, w = 2) => String(n).padStart(w, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

export function countdown(iso, now = Date.now()) {
  const s = Math.round((Date.parse(iso) - now) / 1000);
  if (s <= 0) return 'expiring';
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}h${String(m).padStart(2, '0')}m` : `${m}:${sec}`;
}

/** Seconds as `m:ss` (or `h:mm:ss`). */
export function duration(sec) {
  const s = Math.max(0, Math.round(sec));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

/** Microjoules as J, kJ or MJ (one decimal). */
export function energy(uj) {
  const j = Number(uj) / 1e6;
  if (j < 1000) return `${j.toFixed(1)} J`;
  if (j < 1e6) return `${(j / 1e3).toFixed(1)} kJ`;
  return `${(j / 1e6).toFixed(1)} MJ`;
}

/**
 * A session's row line from `GET /sandboxes`: its idle countdown (closed when it runs out; a parked session
 * never idles) and what it has burned so far — money and energy, estimated.
 */
export function burnLine(s, now = Date.now()) {
  const idle =
    s.state === 'parked' ? 'parked' : `idle ${duration((Date.parse(s.idleDeadline) - now) / 1000)}`;
  return `${idle} · $${s.burn.usd.toFixed(2)} · ${energy(s.burn.energyUj)}`;
}

/** The detail pane's session line: state, idle left of the idle timeout, burn and its rate. */
export function sessionLine(s, now = Date.now()) {
  const idle =
    s.state === 'parked'
      ? `parked${s.snapshot ? ` · snapshot ${s.snapshot.slice(0, 12)}…` : ''}`
      : `open · idle ${duration((Date.parse(s.idleDeadline) - now) / 1000)} of ${duration(s.idleTimeoutSec)}`;
  return `${idle} · burn $${s.burn.usd.toFixed(2)} ($${s.burn.usdPerHour.toFixed(2)}/h) · ${energy(s.burn.energyUj)} ${s.burn.provenance}`;
}

/** A held-open session that is alive is healthy, not stuck work. */
export const isSession = (run) =>
  run.lifetime === 'session' && !['succeeded', 'failed', 'cancelled'].includes(run.status);

export function statusBadge(status, extraClass = '') {
  return `<span class="badge ${esc(status)} ${extraClass}" data-status="${esc(status)}">${esc(status.replace('_', ' '))}</span>`;
}

function what(run) {
  const s = run.subject || {};
  if (run.kind === 'command' && Array.isArray(s.command)) return s.command.join(' ');
  if (run.kind === 'eval' && s.harness) return `${s.harness.id}@${s.harness.version} · ${s.caseId}`;
  if (run.kind === 'analysis' && s.config)
    return `${s.config.fn ?? 'analysis'} ${run.outputs?.summary ?? ''}`;
  if (run.kind === 'agent')
    return `${s.agentId ?? 'agent'}${s.conversationId ? ` · ${s.conversationId}` : ''}`;
  if (run.kind === 'sandbox') return `${s.image ?? 'sandbox'}`;
  return run.outputs?.summary ?? '';
}

export function runRow(run, selectedId) {
  const session = isSession(run);
  const when = session && run.expiresAt ? `ttl ${countdown(run.expiresAt)}` : ago(run.createdAt);
  const badge = session
    ? statusBadge(run.status === 'running' ? 'session' : run.status, 'session')
    : statusBadge(run.status);
  return `<li><button type="button" class="row" data-run="${esc(run.id)}" aria-current="${run.id === selectedId}"
    aria-label="${esc(`${run.kind} run ${run.id} ${run.status}`)}">
    ${badge}<span class="kind">${esc(run.kind)}</span>
    <span class="what"><span class="id mono">${esc(run.id)}</span> <span class="muted">${esc(what(run))}</span></span>
    <span class="when" ${session && run.expiresAt ? `data-expires="${esc(run.expiresAt)}"` : ''}>${esc(when)}</span>
    ${session ? `<span class="burn" data-burn="${esc(run.id)}"></span>` : ''}
  </button></li>`;
}

function scoreLine(scoring) {
  if (!scoring) return '';
  return scoring.aggregate.graders
    .map(
      (g) =>
        `${g.grader} ${g.passRate === null || g.passRate === undefined ? '-' : `${Math.round(g.passRate * 100)}%`}`,
    )
    .join(' · ');
}

export function groupRow(group, runs, expanded, selectedId) {
  const r = group.rollup;
  const done = ['succeeded', 'failed', 'cancelled'].reduce((n, s) => n + (r.byStatus[s] ?? 0), 0);
  const children = expanded
    ? `<ul class="children">${runs.map((x) => runRow(x, selectedId)).join('')}</ul>`
    : '';
  return `<li><button type="button" class="row group" data-group="${esc(group.id)}" aria-expanded="${expanded}"
    aria-label="${esc(`${group.kind} ${group.label} ${r.status}, ${done} of ${r.total} settled`)}">
    ${statusBadge(r.status)}<span class="kind">${esc(group.kind)}</span>
    <span class="what"><span class="id">${expanded ? '▾' : '▸'} ${esc(group.label || group.id)}</span>
      <span class="muted">${done}/${r.total} settled${group.scoring ? ` · ${esc(scoreLine(group.scoring))}` : ''}</span></span>
    <span class="when">${esc(ago(group.createdAt))}</span>
  </button>${children}</li>`;
}

export function queueView(q) {
  return `<dl class="mono">
    <div>queued <b data-q="queued">${q.queued.total}</b> (interactive ${q.queued.interactive} · background ${q.queued.background} · batch ${q.queued.batch})</div>
    <div>running <b data-q="running">${q.running}</b> · sessions ${q.sessions}</div>
    <div class="muted">caps: ${q.caps.maxQueued} queued · ${q.caps.maxConcurrent} concurrent</div>
  </dl>`;
}

export function envelopesView(items) {
  if (!items.length) return '<p class="muted">none</p>';
  return `<ul>${items
    .slice(0, 6)
    .map(
      (e) =>
        `<li><span class="mono">${esc(e.id)}</span>${e.openedBy ? ` <span class="muted">by ${esc(e.openedBy)}</span>` : ''}: runs ${e.spent.runs}/${e.caps.runs ?? '∞'} · in flight ${e.inFlight}/${e.caps.inFlight}${e.caps.usd !== null ? ` · $${e.spent.usd.toFixed(2)}/${e.caps.usd}` : ''}</li>`,
    )
    .join('')}</ul>${items.length > 6 ? `<p class="muted">+${items.length - 6} more</p>` : ''}`;
}

export function runnersView(items) {
  if (!items.length) return '<p class="muted">none paired (embedded execution only)</p>';
  return `<ul>${items
    .map((r) => {
      const kinds = r.capabilities?.kinds ?? [];
      const beat = r.lastHeartbeatAt ? ago(r.lastHeartbeatAt) : 'never';
      return `<li>${esc(r.name ?? r.id)} ${statusBadge(r.state ?? 'unknown')} <span class="muted">${esc(kinds.join(', '))} · ${r.leasesHeld ?? 0} leases · beat ${esc(beat)}</span></li>`;
    })
    .join('')}</ul>`;
}

export function verdictView(v, keys) {
  if (!v) return '<p class="muted">…</p>';
  if (!v.ok)
    return `<p class="verdict bad">does not verify: ${esc(v.error)}${v.index !== undefined ? ` at segment ${v.index}` : ''}</p>`;
  const signer = (k) => {
    const known = keys.find((x) => x.key === k);
    return `<span class="mono">${esc(k.slice(0, 16))}…</span> (${esc(known ? known.kind + (known.name ? ` ${known.name}` : '') : 'unknown key')})`;
  };
  return `<dl>
    <dt>verdict</dt><dd class="verdict ok">verified from genesis</dd>
    <dt>head</dt><dd class="mono">${esc(v.head)} (${v.length} segments, ${esc(v.phase)})</dd>
    <dt>signed by</dt><dd>${v.signedBy?.length ? v.signedBy.map(signer).join(', ') : '<span class="muted">no signatures (unattested)</span>'}</dd>
    <dt>account</dt><dd>${esc(v.account)}</dd>
    <dt>energy</dt><dd>active ${esc(v.cost?.activeUj ?? '-')} µJ · idle ${esc(v.cost?.idleUj ?? v.idleUj ?? '-')} µJ${v.cost?.unresolved ? ` · ${v.cost.unresolved} unresolved` : ''}</dd>
  </dl>`;
}

/** A run's verdicts (`GET /runs/:id/scores`), oldest first: grader, value, passed or failed, and why. */
export function scoresView(scores) {
  if (!scores.length) return '<p class="muted">not scored</p>';
  const row = (s) => {
    const outcome =
      s.passed === undefined
        ? ''
        : s.passed
          ? ' <span class="verdict ok">passed</span>'
          : ' <span class="verdict bad">failed</span>';
    const rescore = s.rescoreOf ? ` <span class="muted">(re-scores ${esc(s.rescoreOf)})</span>` : '';
    return `<li><b>${esc(s.grader)}</b> ${esc(String(s.value))}${outcome}: ${esc(s.detail)}${rescore}</li>`;
  };
  return `<ul class="scores">${scores.map(row).join('')}</ul>`;
}

/** Artifacts listed one by one in a run's detail; past them, one line (the archive holds them all). */
export const ARTIFACTS_LISTED = 50;

/**
 * A run's artifacts (the files its command left under `out/`), each with a button that downloads it — the first
 * ARTIFACTS_LISTED, then how many more — and, for more than one, a button that downloads them all as one tar.
 */
export function artifactsView(artifacts) {
  const row = (a) =>
    `<li><button type="button" data-artifact="${esc(a.name)}">${esc(a.name)}</button> <span class="muted">${esc(String(a.bytes ?? '?'))} bytes · ${esc(a.digest ?? a.uri)}</span></li>`;
  const shown = artifacts.slice(0, ARTIFACTS_LISTED);
  const more = artifacts.length - shown.length;
  const rest = more > 0 ? `<li class="muted">… and ${more} more</li>` : '';
  const all =
    artifacts.length > 1
      ? `<p><button type="button" data-archive>all ${artifacts.length} files (.tar)</button></p>`
      : '';
  return `${all}<ul class="artifacts">${shown.map(row).join('')}${rest}</ul>`;
}

export function treeView(node, selectedId) {
  const self =
    node.id === selectedId
      ? `<b class="mono">${esc(node.id)}</b>`
      : `<button type="button" data-open="${esc(node.id)}" class="mono">${esc(node.id)}</button>`;
  const kids = node.children?.length
    ? `<ul>${node.children.map((c) => treeView(c, selectedId)).join('')}</ul>`
    : '';
  return `<li>${self} <span class="kind">${esc(node.kind)}</span> ${statusBadge(node.status)}${kids}</li>`;
}

/**
 * Terminal byte events (`everdict/terminal`, base64) as the text they carry: `in "ls\r"`. One streaming
 * decoder a direction, so a character split across two events is shown whole (in the second).
 */
export function terminalDecoder() {
  const decoders = { in: new TextDecoder(), out: new TextDecoder() };
  return (ev) => {
    if (ev.type !== 'extension' || ev.ext !== 'everdict/terminal' || typeof ev.data?.data !== 'string')
      return null;
    const decoder = decoders[ev.data.dir];
    if (!decoder) return null;
    let text;
    try {
      text = decoder.decode(
        Uint8Array.from(atob(ev.data.data), (c) => c.charCodeAt(0)),
        { stream: true },
      );
    } catch {
      return null;
    }
    return `terminal ${ev.data.dir} ${JSON.stringify(text)}`;
  };
}
