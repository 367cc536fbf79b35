// Contract: the optional operations — stream, logs, snapshot/restore, files, usage. Each either behaves as
// below or, when describe().capabilities says the driver lacks it, refuses with `unsupported`.
import { expect, it } from 'vitest';
import { blake3Hex } from '../address.js';
import { SandboxUsage } from '../observe.js';
import { isCanonicalTar, readTar } from '../tar/tar-reader.js';
import type { WorkspaceFile } from '../workspace-files.js';
import { collect, out, refusal, type SuiteHarness } from './harness.js';

export function streamTests(h: () => SuiteHarness): void {
  const cmd = () => h().fixture.commands;

  it('streams: stdin in, stdout out, the exit code at the end', async () => {
    const d = await h().driver();
    const handle = await h().provision(d);
    if (!d.describe().capabilities.stream) {
      await refusal(d.stream(handle, cmd().cat()), 'unsupported');
      return;
    }
    const s = await d.stream(handle, cmd().cat());
    const stdout = collect(s.stdout);
    const stderr = collect(s.stderr);
    s.stdin.write('ping\n');
    s.stdin.end('pong\n');
    expect(await s.exit).toEqual({ exitCode: 0, signal: null });
    expect(await stdout).toBe('ping\npong\n');
    expect(await stderr).toBe('');
    expect(typeof s.resize({ cols: 100, rows: 30 })).toBe('boolean');
    const code = await d.stream(handle, cmd().exit(7));
    code.stdin.end();
    expect((await code.exit).exitCode).toBe(7);
  });

  it('kills a stream on request, and refuses a pty it does not have', async () => {
    const d = await h().driver();
    const handle = await h().provision(d);
    if (!d.describe().capabilities.stream) return;
    const s = await d.stream(handle, cmd().sleep(60_000));
    s.kill();
    const exit = await s.exit;
    expect(exit.exitCode === null || exit.exitCode !== 0).toBe(true);
    if (!d.describe().capabilities.pty)
      await refusal(d.stream(handle, cmd().cat(), { tty: true }), 'unsupported');
    expect(out(await d.exec(handle, cmd().echo('alive')))).toBe('alive');
  });

  // Through the Kubernetes test server the start size arrives as a first resize, before or after the probe's
  // trap: either way the probe prints it (as its size or on SIGWINCH) and keeps reading, so the test waits
  // on what the probe printed, never on time.
  it('gives a pty when asked: the program sees a terminal of the size given, and of the size resized to', async () => {
    const d = await h().driver();
    const handle = await h().provision(d);
    if (!d.describe().capabilities.pty) return; // the refusal is asserted above
    const probe = cmd().ttyProbe;
    if (!probe) throw new Error('a driver with a pty must give the suite a ttyProbe command');
    const s = await d.stream(handle, probe(), { tty: true, size: { cols: 100, rows: 30 } });
    expect(s.pty).toBe(true);
    const seen = textOf(s.stdout);
    // The size may arrive as the start size or (Kubernetes sends it on the resize channel) as a first resize.
    await seen.until(' 30 100');
    expect(seen.text()).toContain('is-a-tty');
    expect(s.resize({ cols: 132, rows: 50 })).toBe(true);
    await seen.until('winch 50 132'); // SIGWINCH reached the program, and stty reads the new size
    expect(s.resize({ cols: 90, rows: 20 })).toBe(true); // a program that took a SIGWINCH keeps its terminal
    await seen.until('winch 20 90');
    s.stdin.end('q\n');
    expect(await s.exit).toEqual({ exitCode: 0, signal: null });
    await seen.ended;
    expect(s.resize({ cols: 80, rows: 24 })).toBe(false); // nothing left to resize
  });
}

/** Everything a stream printed so far, and a wait for a text to appear in it (or the stream to end without it). */
function textOf(stream: NodeJS.ReadableStream): {
  text(): string;
  until(needle: string): Promise<void>;
  ended: Promise<void>;
} {
  let text = '';
  let ended = false;
  const waiters = new Set<() => void>();
  stream.on('data', (c: Buffer | string) => {
    text += c.toString();
    for (const w of waiters) w();
  });
  const endedP = new Promise<void>((resolve) => {
    stream.on('end', () => {
      ended = true;
      for (const w of waiters) w();
      resolve();
    });
  });
  return {
    ended: endedP,
    text: () => text,
    until: (needle) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (text.includes(needle)) {
            waiters.delete(check);
            resolve();
          } else if (ended) {
            waiters.delete(check);
            reject(
              new Error(
                `the stream ended without ${JSON.stringify(needle)}; it printed ${JSON.stringify(text)}`,
              ),
            );
          }
        };
        waiters.add(check);
        check();
      }),
  };
}

export function logTests(h: () => SuiteHarness): void {
  const cmd = () => h().fixture.commands;

  it('logs what commands printed; follow tails until dispose', async () => {
    const d = await h().driver();
    const handle = await h().provision(d);
    if (!d.describe().capabilities.logs) {
      await refusal(async () => collect(d.logs(handle)), 'unsupported');
      return;
    }
    await d.exec(handle, cmd().echo('alpha-line'));
    expect(await collect(d.logs(handle))).toContain('alpha-line');
    const seen: string[] = [];
    let resolveBeta!: () => void;
    const sawBeta = new Promise<void>((r) => {
      resolveBeta = r;
    });
    const tail = (async () => {
      for await (const c of d.logs(handle, { follow: true })) {
        seen.push(Buffer.from(c).toString('utf8'));
        if (seen.join('').includes('beta-line')) resolveBeta();
      }
    })();
    await d.exec(handle, cmd().echo('beta-line'));
    await sawBeta;
    await d.dispose(handle);
    await tail;
    expect(seen.join('')).toContain('alpha-line');
  });
}

export function snapshotTests(h: () => SuiteHarness): void {
  const cmd = () => h().fixture.commands;

  it('snapshots the workspace as a canonical tar addressed by BLAKE3; restore reproduces it', async () => {
    const d = await h().driver();
    const a = await h().provision(d);
    const caps = d.describe().capabilities;
    if (!caps.snapshot) {
      await refusal(d.snapshot(a), 'unsupported');
      if (!caps.restore)
        await refusal(d.restore(a, { address: '0'.repeat(64), bytes: new Uint8Array() }), 'unsupported');
      return;
    }
    await d.exec(a, cmd().writeFile('top.txt', 'top'));
    await d.exec(a, cmd().writeFile('dir/inner/deep.txt', 'deep'));
    const snap = await d.snapshot(a);
    expect(snap.address).toBe(blake3Hex(snap.bytes));
    expect(await isCanonicalTar(snap.bytes)).toBe(true);
    const entries = await readTar(snap.bytes);
    const byPath = new Map(entries.map((e) => [e.path, e]));
    const top = byPath.get('top.txt');
    expect(top?.type === 'file' && Buffer.from(top.data).toString()).toBe('top');
    expect(byPath.get('dir/inner')?.type).toBe('directory');
    if (!caps.restore) return;
    const b = await h().provision(d);
    await d.exec(b, cmd().writeFile('stale.txt', 'stale'));
    await d.restore(b, snap);
    expect(out(await d.exec(b, cmd().readFile('dir/inner/deep.txt')))).toBe('deep');
    expect((await d.exec(b, cmd().readFile('stale.txt'))).exitCode).not.toBe(0);
    expect((await d.snapshot(b)).address).toBe(snap.address);
    const seeded = await h().provision(d, { workspace: snap });
    expect(out(await d.exec(seeded, cmd().readFile('top.txt')))).toBe('top');
  });

  it('refuses a snapshot whose bytes do not hash to its address, leaving the workspace as it was', async () => {
    const d = await h().driver();
    const a = await h().provision(d);
    if (!d.describe().capabilities.restore) return;
    await d.exec(a, cmd().writeFile('keep.txt', 'original'));
    const snap = await d.snapshot(a);
    const tampered = new Uint8Array(snap.bytes);
    tampered[tampered.length - 1100] = (tampered[tampered.length - 1100]! + 1) & 0xff;
    const b = await h().provision(d);
    await d.exec(b, cmd().writeFile('keep.txt', 'untouched'));
    const err = await refusal(d.restore(b, { address: snap.address, bytes: tampered }), 'snapshot_mismatch');
    expect(err.detail).toMatchObject({ offered: snap.address });
    await refusal(
      d.restore(b, { address: blake3Hex(new Uint8Array([1])), bytes: snap.bytes }),
      'snapshot_mismatch',
    );
    expect(out(await d.exec(b, cmd().readFile('keep.txt')))).toBe('untouched');
  });
}

export function usageTests(h: () => SuiteHarness): void {
  const cmd = () => h().fixture.commands;

  it('reports usage as measured: wall time, and CPU/peak memory or null', async () => {
    const d = await h().driver();
    const handle = await h().provision(d);
    if (!d.describe().capabilities.usage) {
      await refusal(d.usage(handle), 'unsupported');
      return;
    }
    await d.exec(handle, cmd().flood(200_000));
    const u = SandboxUsage.parse(await d.usage(handle));
    expect(u.mechanism).toBe(d.describe().mechanism);
    expect(u.wallTimeMs).toBeGreaterThanOrEqual(0);
    await d.exec(handle, cmd().echo('more'));
    const later = await d.usage(handle);
    expect(later.wallTimeMs).toBeGreaterThanOrEqual(u.wallTimeMs);
    if (u.cpuTimeMs !== null) expect(later.cpuTimeMs).toBeGreaterThanOrEqual(u.cpuTimeMs);
    if (u.peakMemoryBytes !== null) expect(u.peakMemoryBytes).toBeGreaterThan(0);
  });
}

/** Every file `files` yields, its content read in full (in the order yielded). */
async function readAll(
  files: AsyncIterable<WorkspaceFile>,
): Promise<Map<string, { size: number; text: string }>> {
  const seen = new Map<string, { size: number; text: string }>();
  for await (const f of files) seen.set(f.path, { size: f.size, text: await collect(f.content) });
  return seen;
}

export function filesTests(h: () => SuiteHarness): void {
  const cmd = () => h().fixture.commands;

  it('streams the regular files under a workspace directory, nothing else, and none for an absent one', async () => {
    const d = await h().driver();
    if (!d.describe().capabilities.snapshot) {
      const a = await h().provision(d);
      await refusal(() => readAll(d.files(a, 'out')), 'unsupported');
      return;
    }
    // Directories only (what a command that wrote no file leaves): no file.
    const a = await h().provision(d, { directories: ['out', 'out/empty-dir'] });
    expect((await readAll(d.files(a, 'out'))).size).toBe(0);
    const big = 'x'.repeat(cmd().fill ? 300_000 : 1000);
    await d.exec(a, cmd().writeFile('out/a.txt', 'alpha'));
    await d.exec(
      a,
      cmd().fill?.('out/nested/deep/b.bin', big.length) ?? cmd().writeFile('out/nested/deep/b.bin', big),
    );
    await d.exec(a, cmd().writeFile('out/empty.txt', ''));
    await d.exec(a, cmd().writeFile('elsewhere.txt', 'not under out'));
    await d.exec(a, cmd().writeFile('out/.hidden', 'h'));
    const seen = await readAll(d.files(a, 'out'));
    expect([...seen.keys()].sort()).toEqual(['.hidden', 'a.txt', 'empty.txt', 'nested/deep/b.bin']);
    expect(seen.get('a.txt')).toEqual({ size: 5, text: 'alpha' });
    expect(seen.get('nested/deep/b.bin')).toEqual({ size: big.length, text: big });
    expect(seen.get('empty.txt')).toEqual({ size: 0, text: '' });
    expect([...(await readAll(d.files(a, 'out/nested'))).keys()]).toEqual(['deep/b.bin']);
    // A second hard link to a file is a file too, with the same bytes.
    const link = cmd().hardLink?.('out/a.txt', 'out/linked.txt');
    if (link) {
      expect((await d.exec(a, link)).exitCode).toBe(0);
      const linked = await readAll(d.files(a, 'out'));
      expect(linked.get('linked.txt')).toEqual({ size: 5, text: 'alpha' });
      expect(linked.get('a.txt')).toEqual({ size: 5, text: 'alpha' });
    }
    await d.exec(a, cmd().writeFile('plain-file', 'a file, not a directory'));
    expect((await readAll(d.files(a, 'plain-file'))).size).toBe(0);
    expect((await readAll(d.files(a, 'no-such-dir'))).size).toBe(0);
  });

  it('stops reading when its consumer stops early (the sandbox goes on) or gives a file up, and refuses a path out of the workspace', async () => {
    const d = await h().driver();
    const a = await h().provision(d);
    if (!d.describe().capabilities.snapshot) return;
    for (const name of ['1', '2', '3'])
      await d.exec(a, cmd().fill?.(`out/${name}.txt`, 200_000) ?? cmd().writeFile(`out/${name}.txt`, name));
    let first = '';
    for await (const f of d.files(a, 'out')) {
      first = f.path;
      break; // its content never read
    }
    expect(['1.txt', '2.txt', '3.txt']).toContain(first);
    expect(out(await d.exec(a, cmd().echo('still here')))).toBe('still here');
    expect((await readAll(d.files(a, 'out'))).size).toBe(3);
    // A consumer that gives one file up mid-body (its stream destroyed: an upload refused) still gets the rest.
    const names: string[] = [];
    for await (const f of d.files(a, 'out')) {
      names.push(f.path);
      if (names.length === 1) for await (const _ of f.content) break;
      else expect((await collect(f.content)).length).toBe(cmd().fill ? 200_000 : 1);
    }
    expect(names.sort()).toEqual(['1.txt', '2.txt', '3.txt']);
    for (const bad of ['../etc', '/etc', 'out/../..', 'out//x', '.', ''])
      await expect(readAll(d.files(a, bad)), bad).rejects.toThrow();
  });
}
