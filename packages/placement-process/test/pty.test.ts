// Pty streams keep the caller's order: a resize is applied before any stdin written after it reaches the
// command, and the end of input comes after every resize before it — through the spawner and inline.
import { describe, expect, it } from 'vitest';
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

describe.each(['process', 'inline'] as const)('pty input order (spawner: %s)', (spawner) => {
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
});
