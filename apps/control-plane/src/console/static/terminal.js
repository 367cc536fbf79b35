// A terminal into a held-open session: a ticket (`POST /runs/:id/terminal-ticket`, API key), then the
// `GET /runs/:id/terminal?ticket=` WebSocket — binary frames raw stdin/stdout, text frames JSON
// `{"type":"resize",cols,rows}` (sent) and `{"type":"exit",code}` (received). xterm.js is served from the
// control plane's node_modules (/console/assets/xterm.mjs).

export async function openTerminal(container, runId, conn, onStatus) {
  const [{ Terminal }, { FitAddon }] = await Promise.all([
    import('/console/assets/xterm.mjs'),
    import('/console/assets/addon-fit.mjs'),
  ]);
  if (!document.querySelector('link[data-xterm]')) {
    const link = document.createElement('link');
    link.rel = 'stylesheet';
    link.href = '/console/assets/xterm.css';
    link.dataset.xterm = '1';
    document.head.append(link);
  }
  const { ticket } = await conn.call('POST', `/runs/${encodeURIComponent(runId)}/terminal-ticket`, {});
  const term = new Terminal({ convertEol: false, fontSize: 13, cursorBlink: true });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(container);
  fit.fit();
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  const ws = new WebSocket(
    `${scheme}://${location.host}/runs/${encodeURIComponent(runId)}/terminal?ticket=${encodeURIComponent(ticket)}`,
  );
  ws.binaryType = 'arraybuffer';
  let exited = null; // the remote shell's `{"type":"exit",code}`: the close that follows keeps saying so
  const encoder = new TextEncoder();
  const resize = () => {
    fit.fit();
    if (ws.readyState === 1) ws.send(JSON.stringify({ type: 'resize', cols: term.cols, rows: term.rows }));
  };
  ws.onopen = () => {
    onStatus('connected');
    resize();
    term.focus();
  };
  ws.onmessage = (m) => {
    if (typeof m.data === 'string') {
      try {
        const msg = JSON.parse(m.data);
        if (msg.type === 'exit') {
          exited = msg.code;
          onStatus(`exited ${msg.code}`);
        }
      } catch {
        /* not ours */
      }
      return;
    }
    term.write(new Uint8Array(m.data));
  };
  ws.onclose = (e) => {
    if (exited === null)
      onStatus(e.code === 1000 ? 'closed' : `closed (${e.code}${e.reason ? ` ${e.reason}` : ''})`);
  };
  term.onData((d) => ws.readyState === 1 && ws.send(encoder.encode(d)));
  window.addEventListener('resize', resize);
  return {
    close() {
      window.removeEventListener('resize', resize);
      ws.close();
      term.dispose();
    },
  };
}
