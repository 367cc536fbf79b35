// Pty streams keep the caller's order: a resize is applied before any stdin written after it reaches the
// command, and the end of input comes after every resize before it — through the spawner and inline. When
// the resize loop inside the sandbox dies (fd 5 stays open: `script` holds it), a resize is given up after
// RESIZE_ACK_TIMEOUT_MS and the input goes on instead of stalling.
import { describe, expect, it } from 'vitest';
import { RESIZE_ACK_TIMEOUT_MS } from '../src/pty-input.js';
import { makeDriver, requireBwrap } from './helpers.js';

requireBwrap();

/** What a stream printed so far, a wait for a text to appear in it, and its end. */
function watch(stream: NodeJS.ReadableStream) {
  let text = '';
  const waiters = new Set<() => void>();
  stream.on('data', (c: Buffer | string) => {
    text += c.toString();
    for (const w of waiters) w();
  });
  const ended = new Promise<string>((resolve) => stream.on('end', () => resolve(text)));
  const until = (pattern: RegExp) =>
    new Promise<RegExpExecArray>((resolve) => {
      const check = () => {
        const found = pattern.exec(text);
        if (!found) return;
        waiters.delete(check);
        resolve(found);
      };
      waiters.add(check);
      check();
    });
  return { until, ended };
}

// Waits in `read` for each line, then prints it with the terminal's size; at end of input prints the size.
const SIZE_PER_LINE = [
  'sh',
  '-c',
  'stty -echo; echo ready; while read -r l; do echo "seen $l $(stty size)"; done; echo "done $(stty size)"',
];

// Concurrent: each test has its own driver and sandbox (its own pid namespace: the loop killer sees only its
// sandbox), and the two resize-loop tests each wait out RESIZE_ACK_TIMEOUT_MS (5 s) — together, not in turn.
describe.concurrent.each(['process', 'inline'] as const)('pty input order (spawner: %s)', (spawner) => {
  it('applies a resize before the stdin written after it, and before the end of input after it', async () => {
    const driver = makeDriver({ spawner });
    const handle = await driver.provision({ labels: { tenant: 'pty', runId: spawner, kind: 'sandbox' } });
    const s = await driver.stream(handle, SIZE_PER_LINE, { tty: true, size: { cols: 80, rows: 24 } });
    const out = watch(s.stdout);
    await out.until(/ready/);
    // Each round the command already waits in `read`: the line is read as soon as it reaches the pty, so
    // without the ordering it races the resize written just before it.
    for (let i = 0; i < 10; i++) {
      const size = { cols: 40 + i * 7, rows: 10 + i * 3 };
      expect(s.resize(size)).toBe(true);
      s.stdin.write(`k${i}\n`);
      const [, rows, cols] = await out.until(new RegExp(`seen k${i} (\\d+) (\\d+)\r\n`));
      expect({ rows: Number(rows), cols: Number(cols) }).toEqual({ rows: size.rows, cols: size.cols });
    }
    expect(s.resize({ cols: 200, rows: 60 })).toBe(true);
    s.stdin.end();
    expect(await s.exit).toEqual({ exitCode: 0, signal: null });
    expect(await out.ended).toMatch(/done 60 200\r\n$/);
    expect(s.resize({ cols: 80, rows: 24 })).toBe(false);
    await driver.dispose(handle);
  });
  it('does not stall stdin when the resize loop died: the resize is given up, the input goes on', {
    timeout: 60_000,
  }, async () => {
    const driver = makeDriver({ spawner });
    const handle = await driver.provision({
      labels: { tenant: 'pty', runId: `${spawner}-dead`, kind: 'sandbox' },
    });
    // The command kills the loop (the `sh` holding fd 5 beside it); `script` keeps fd 5 open, so no close comes.
    const killLoop = [
      'sh',
      '-c',
      'stty -echo; for d in /proc/[0-9]*; do [ "$(cat $d/comm 2>/dev/null)" = sh ] && [ -e $d/fd/5 ] && kill -9 "$(basename $d)"; done; ' +
        'echo killed; while read -r l; do echo "seen $l $(stty size)"; done; echo done',
    ];
    const s = await driver.stream(handle, killLoop, { tty: true, size: { cols: 80, rows: 24 } });
    const out = watch(s.stdout);
    await out.until(/killed/);
    const asked = Date.now();
    expect(s.resize({ cols: 100, rows: 30 })).toBe(true);
    s.stdin.write('k\n');
    await out.until(/seen k 24 80\r\n/); // not applied, but the line got through
    expect(Date.now() - asked).toBeGreaterThanOrEqual(RESIZE_ACK_TIMEOUT_MS - 50);
    expect(s.resize({ cols: 120, rows: 40 })).toBe(false); // resizes stopped
    s.stdin.end();
    expect(await s.exit).toEqual({ exitCode: 0, signal: null });
    expect(await out.ended).toMatch(/done\r\n$/);
    await driver.dispose(handle);
  });
});
