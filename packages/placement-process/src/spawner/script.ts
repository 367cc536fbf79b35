// The spawner's own program: a few dozen lines of plain CommonJS run with `node -e` in a small process
// (small heap), so starting bubblewrap forks a process of a few MB of page tables instead of the driver's
// (≈ 90 MB RSS in the runner; libuv forks with fork(), which copies the parent's page tables and blocks
// its event loop until the child has exec'd). Kept as a string so it runs the same from src/ (tests) and
// dist/ with no file to locate. Protocol (JSON over the IPC channel), see client.ts:
//   → {t:'spawn', id, file, args, env, uid?, gid?, join: string[] | null, leave: string[], status, control,
//     fdArgs}
//   ← {t:'pid', id, pid}; {t:'fd', id, i} with the pipe handle of the child's fd i (0, 1, 2, and 5 with
//     `control`); {t:'init', id, pid} once the namespace init is in the cgroups (`join`); {t:'warning', id,
//     message}: bubblewrap could not be moved back into `leave` (best-effort, the command runs); {t:'failed', id,
//     message}; {t:'exit', id, code, signal, status}.
// With `status` (or `join`), fd 3 is bubblewrap's --json-status-fd, read to its end: `status` is the
// `exit-code` it wrote there — only for a command it exec'd; null when none came — and the exit is sent
// once fd 3 has ended. With `join` (and fdArgs: required), the spawner writes bubblewrap's own pid into
// every `cgroup.procs` of `join` before it writes fd 6 (and ends it), so bubblewrap clones its namespace init (and the
// cgroup namespace) inside the sandbox's cgroups; bubblewrap holds that init (--block-fd 4) and the spawner,
// once it has the init's pid (`child-pid` on fd 3), moves bubblewrap back into `leave` (best-effort: a
// failed write is a `warning`, bubblewrap then stays in the sandbox's cgroups until it exits), then releases it.
// Warm (`warm: {mount, controller}` with `join`): a write to cgroup.procs takes the kernel's global
// cgroup_threadgroup_rwsem for writing, and the first writer after ≈ a grace period without one waits for
// an RCU grace period (rcu_sync; ≈ 5–15 ms here, measured: 0.03–0.2 ms for the writes right after). So
// while bubblewrap starts, the spawner writes its own pid into the cgroup it is already in (a move to where
// it is: nothing changes) and that wait overlaps the start instead of holding the command; skipped when
// the spawner wrote a cgroup.procs within the last few ms (the lock is still warm). The spawner exits when the
// channel closes (its parent died), after it SIGKILLed every bubblewrap it started and has not seen exit,
// with its process group (a held namespace init is in it), and each released namespace init: bubblewrap's
// --die-with-parent alone left some behind (it is set only after bubblewrap's clone, and a held init reads
// end-of-file on --block-fd as "go": README, "The owner's death").
// fdArgs (a string[], or null): written to the child's fd 6, each NUL-terminated, and that end closed
// (bubblewrap's --args 6 reads it to its end): arguments no process's command line shows.
// Inherited descriptors: a descriptor the driver's process inherited without close-on-exec (a shell's, a
// supervisor's) passes to every process it forks, and bubblewrap closes none, so it would reach every
// sandbox. Node opens its own with close-on-exec (the IPC channel included), so at start the spawner closes
// every descriptor above 2 whose flags (/proc/self/fdinfo) lack O_CLOEXEC: only inherited ones.
export const SPAWNER_SCRIPT = String.raw`'use strict';
const { spawn } = require('node:child_process');
const { closeSync, openSync, readdirSync, readFileSync, write } = require('node:fs');
const { writeFile } = require('node:fs/promises');
const O_CLOEXEC = 0o2000000;
(function closeInherited() {
  let fds;
  try { fds = readdirSync('/proc/self/fd'); } catch { return; }
  for (const name of fds) {
    const fd = Number(name);
    if (!(fd > 2)) continue;
    try {
      const flags = /flags:\s*([0-7]+)/.exec(readFileSync('/proc/self/fdinfo/' + fd, 'utf8'));
      if (flags && (parseInt(flags[1], 8) & O_CLOEXEC) === 0) closeSync(fd);
    } catch {}
  }
})();
let lastAttach = 0;
let warmPath = null;
let warmFd = null;
const WARM_FOR_MS = 4;
function ownProcs(w) {
  try {
    for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
      const [, controllers, rel] = line.split(':');
      if (rel !== undefined && (w.controller === '' ? line.startsWith('0::') : controllers.split(',').includes(w.controller))) {
        return w.mount + (rel === '/' ? '' : rel) + '/cgroup.procs';
      }
    }
  } catch {}
  return null;
}
function warm(w) {
  const now = Date.now();
  if (!w || now - lastAttach < WARM_FOR_MS) return;
  lastAttach = now;
  // Read each time (a small /proc file): should something else move the spawner, it is not moved back.
  const path = ownProcs(w);
  if (path === null) return;
  // Kept open: one thread-pool write, issued before the fork blocks this thread, runs while it does.
  if (path !== warmPath) {
    if (warmFd !== null) try { closeSync(warmFd); } catch {}
    warmFd = null;
    warmPath = null;
    try { warmFd = openSync(path, 'w'); warmPath = path; } catch { return; }
  }
  write(warmFd, String(process.pid), () => {});
}
const send = (m, h) => {
  if (!process.connected) { if (h) h.close(); return; }
  if (h) process.send(m, h, () => h.close()); else process.send(m);
};
const killAll = (pids) => { for (const p of pids) { if (p) try { process.kill(p, 'SIGKILL'); } catch {} } };
// Started and not seen exit: [bubblewrap's pid, the namespace init's once released] (killAll at the end).
const live = new Map();
const end = () => {
  for (const [pid, init] of live.values()) killAll([-pid, pid, init]);
  process.exit(0);
};
process.on('disconnect', end);
// 'disconnect' never comes when the driver died while a handle it had not acknowledged was in flight (Node
// queues the disconnect behind the handle's ACK): the spawner lived on with every sandbox. Stdin is a pipe
// only the driver holds (close-on-exec there), so its end says the same, always.
process.stdin.on('end', end);
process.stdin.on('error', end);
process.stdin.resume();
process.on('message', (m) => { if (m && m.t === 'spawn') start(m); });
function detach(s) {
  const h = s && s._handle;
  if (!h) return null;
  if (h.reading) { h.readStop(); h.reading = false; }
  s._handle = null;
  return h;
}
function start(m) {
  const hold = m.join !== null;
  const status = hold || m.status === true;
  const stdio = ['pipe', 'pipe', 'pipe'];
  if (status) stdio.push('pipe'); else if (m.control) stdio.push('ignore');
  if (hold) stdio.push('pipe'); else if (m.control) stdio.push('ignore');
  if (m.control) stdio.push('pipe');
  const fdArgs = Array.isArray(m.fdArgs) ? m.fdArgs : null;
  if (fdArgs) { while (stdio.length < 6) stdio.push('ignore'); stdio.push('pipe'); }
  if (hold) warm(m.warm);
  let c;
  try {
    c = spawn(m.file, m.args, Object.assign({ detached: true, env: m.env, stdio }, m.uid === undefined ? {} : { uid: m.uid, gid: m.gid }));
  } catch (e) {
    send({ t: 'failed', id: m.id, message: String(e && e.message) });
    return;
  }
  // Take the pipes away from the ChildProcess before the event loop runs: nothing is read here, and
  // nothing of the ChildProcess closes them; each is sent to the parent and closed here once sent.
  const pipes = [0, 1, 2, 5].map((i) => [i, detach(c.stdio[i])]);
  // No stdin from the driver: our end closed now, the command reads end-of-file; no descriptor sent.
  if (m.stdin === false && pipes[0][1]) { pipes[0][1].close(); pipes[0][1] = null; }
  let failed = false;
  c.on('error', (e) => {
    if (failed) return;
    failed = true;
    for (const [, h] of pipes) if (h) h.close();
    send({ t: 'failed', id: m.id, message: e.message });
    if (c.pid === undefined) send({ t: 'exit', id: m.id, code: null, signal: null, status: null });
  });
  if (c.pid === undefined) return;
  if (fdArgs && c.stdio[6]) {
    const a = c.stdio[6];
    a.on('error', () => {});
    const bytes = fdArgs.map((x) => x + '\0').join('');
    if (!hold) a.end(bytes, () => a.destroy());
    else {
      // Written only once bubblewrap is in the cgroups (it reads them to their end before its clone). Not
      // before: a spawner killed between that write and the join closed fd 6 with every option in it, and
      // bubblewrap cloned its init outside the sandbox's cgroups, where dispose could not reach it. Killed
      // before the join, fd 6 ends empty: bubblewrap has no options, no root to exec from, and fails.
      Promise.all(m.join.map((f) => writeFile(f, String(c.pid)))).then(
        () => {
          lastAttach = Date.now();
          a.end(bytes, () => a.destroy());
        },
        (e) => {
          a.destroy();
          killAll([-c.pid, c.pid]);
          send({ t: 'failed', id: m.id, message: e.message });
        },
      );
    }
  }
  const entry = [c.pid, null];
  live.set(m.id, entry);
  c.once('exit', () => live.delete(m.id));
  send({ t: 'pid', id: m.id, pid: c.pid });
  for (const [i, h] of pipes) if (h) send({ t: 'fd', id: m.id, i }, h);
  let exitCode = null;
  let statusRead = Promise.resolve();
  if (status) {
    const info = c.stdio[3];
    const release = hold ? c.stdio[4] : null;
    statusRead = new Promise((r) => { info.once('end', r); info.once('close', r); info.once('error', r); });
    info.on('error', () => {});
    if (release) release.on('error', () => {});
    let text = '';
    let init = null;
    // One JSON object a line: child-pid first, exit-code last. Read to the end (a closed reader would
    // SIGPIPE bubblewrap).
    info.on('data', (chunk) => {
      text += chunk.toString('utf8');
      for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n')) {
        const line = text.slice(0, nl);
        text = text.slice(nl + 1);
        const code = /"exit-code"\s*:\s*(-?\d+)/.exec(line);
        if (code) exitCode = Number(code[1]);
        const found = /"child-pid"\s*:\s*(\d+)/.exec(line);
        if (found && hold && init === null) joinInit(Number(found[1]));
      }
      if (text.length > 4096) text = '';
    });
    const joinInit = (pid) => {
      init = pid;
      // Born in the cgroups (bubblewrap joined before its clone): bubblewrap goes back to the spawner's own.
      // Off this thread (libuv's pool): the first write to a v1 cgroup.procs waits for an RCU grace period.
      // Best-effort: a file not writable here (our own cgroup outside a delegated subtree) leaves bubblewrap
      // in the sandbox's cgroups until it exits; the command runs and the driver is warned. ESRCH: bubblewrap
      // is gone already (its own failure, told by its status): nothing to move, nothing to say.
      const leaves = (m.leave || []).map((f) => writeFile(f, String(c.pid)));
      Promise.allSettled(leaves).then((results) => {
        const failed = results.find((r) => r.status === 'rejected' && !(r.reason && r.reason.code === 'ESRCH'));
        if (failed) send({ t: 'warning', id: m.id, message: 'leave ' + String(failed.reason && failed.reason.message) });
        lastAttach = Date.now();
        entry[1] = init;
        send({ t: 'init', id: m.id, pid: init });
        release.end('1');
      });
    };
  }
  c.on('exit', (code, signal) => statusRead.then(() => send({ t: 'exit', id: m.id, code, signal, status: exitCode })));
}
`;
