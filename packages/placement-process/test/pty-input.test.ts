// The pty input's wait for a resize acknowledgement is bounded: a real process holds fd 5 open and never
// answers (what `script` does once the in-sandbox resize loop died: it still holds fd 5, so no close comes).
// The resize is given up with a typed `timeout` error, the input after it goes on, and resizes stop.
import { spawn } from 'node:child_process';
import type { Duplex, Readable, Writable } from 'node:stream';
import { isPlacementError, type PlacementError } from '@everdict/placement';
import { describe, expect, it } from 'vitest';
import { PtyInput } from '../src/pty-input.js';

describe('PtyInput when the resize loop is gone but fd 5 stays open', () => {
  // Without the bound this test stalls (the input waits forever): its own timeout makes that a failure.
  it('gives the resize up after ackTimeoutMs: the input after it reaches the command, resizes stop', {
    timeout: 30_000,
  }, async () => {
    // `cat` inherits fd 5 (a socket, as the sandbox's control channel) and never writes to it.
    const child = spawn('cat', [], { stdio: ['pipe', 'pipe', 'inherit', 'ignore', 'ignore', 'pipe'] });
    const [stdin, stdout] = child.stdio as unknown as [Writable, Readable];
    const control = (child.stdio as unknown as Duplex[])[5]!;
    control.on('error', () => undefined); // as launch.ts: the unread resize line resets it when cat exits
    let out = '';
    stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const failures: PlacementError[] = [];
    const input = new PtyInput(stdin, control, {
      ackTimeoutMs: 200,
      onResizeFailed: (e) => failures.push(e),
    });

    input.stdin.write('before\n');
    expect(input.resize({ cols: 100, rows: 30 })).toBe(true);
    input.stdin.write('after\n'); // held behind the resize until it is acknowledged — or given up
    input.stdin.end();

    expect(await exited).toBe(0); // cat saw the end of input: nothing stalled
    expect(out).toBe('before\nafter\n');
    expect(failures).toHaveLength(1);
    expect(isPlacementError(failures[0], 'timeout')).toBe(true);
    expect(failures[0]?.detail).toMatchObject({ size: { cols: 100, rows: 30 }, ackTimeoutMs: 200 });
    expect(input.failure).toBe(failures[0]);
    // The loop is taken as gone: no further resize is queued (its acknowledgement could not be told apart).
    expect(input.resize({ cols: 80, rows: 24 })).toBe(false);
    control.destroy();
  });
});
