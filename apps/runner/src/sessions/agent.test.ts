// The session agent's stream output under back-pressure, on a real process-driver sandbox and a real
// WebSocket: a command printing fast into a control plane that stops reading keeps the runner's unsent
// channel bytes under the high-water mark (plus a chunk) — the command blocks on its pipe — and once the
// control plane reads again every byte arrives, in order, before the stream's exit.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type ControlFrame,
  parseStreamFrame,
  RunnerFrame,
  STDIN,
  STDOUT,
  streamFrame,
} from '@everdict/placement';
import { ProcessDriver } from '@everdict/placement-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type WebSocket, WebSocketServer } from 'ws';
import { SessionAgent } from './agent.js';

const HIGH = 256 * 1024;
const LOW = 64 * 1024;
/** The high-water mark plus what one turn may still send past it (a pipe read on each output, framed). */
const BOUND = HIGH + 256 * 1024;
const LINES = 4_000_000; // `seq 1 4000000`: ~31 MB, far more than the loopback's socket buffers hold

let dir: string;
let wss: WebSocketServer;
let agent: SessionAgent;
let driver: ProcessDriver;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'runner-agent-'));
  chmodSync(dir, 0o711); // the sandbox user passes through to its workspace
  driver = new ProcessDriver({ stateDir: join(dir, 'state'), imagesDir: join(dir, 'images') });
  wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/runner/v1/sessions' });
  await new Promise<void>((r) => (wss.address() ? r() : wss.once('listening', () => r())));
});
afterAll(async () => {
  for (const c of wss.clients) c.terminate(); // a stalled one too
  await agent?.stop();
  await new Promise<void>((r) => wss.close(() => r()));
  driver?.drainReadyPool();
  rmSync(dir, { recursive: true, force: true });
});

/** Waits on a condition (polled), never on time alone. */
async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('session agent stream output', () => {
  it('a fast producer into a stalled channel stays bounded, and every byte arrives once it drains', async () => {
    const socket = new Promise<WebSocket>((r) => wss.once('connection', (ws) => r(ws)));
    agent = new SessionAgent({
      url: `http://127.0.0.1:${(wss.address() as AddressInfo).port}`,
      credential: 'test',
      driver,
      images: ['*'],
      slots: 1,
      outputHighWaterBytes: HIGH,
      outputLowWaterBytes: LOW,
    });
    agent.start();
    const ws = await socket;
    const frames: RunnerFrame[] = [];
    const out: Buffer[] = [];
    let exitedAt = -1; // bytes received when the exit frame came
    let received = 0;
    ws.on('message', (data, isBinary) => {
      const buf = data as Buffer;
      if (isBinary) {
        const f = parseStreamFrame(buf);
        if (f?.kind === STDOUT) {
          out.push(Buffer.from(f.bytes));
          received += f.bytes.length;
        }
        return;
      }
      const frame = RunnerFrame.parse(JSON.parse(buf.toString('utf8')));
      if (frame.t === 'exit') exitedAt = received;
      frames.push(frame);
    });
    const call = async (id: string, op: (ControlFrame & { t: 'call' })['op'], args: unknown) => {
      ws.send(JSON.stringify({ t: 'call', id, op, args } satisfies ControlFrame));
      const r = await until(`result ${id}`, () =>
        frames.find((f): f is RunnerFrame & { t: 'result' } => f.t === 'result' && f.id === id),
      );
      if (!r.ok) throw new Error(JSON.stringify(r.error));
      return r.value;
    };
    await until('hello', () => frames.find((f) => f.t === 'hello'));
    const handle = await call('p', 'provision', {
      spec: { image: 'default', labels: { tenant: 't', runId: 'run_bp', kind: 'sandbox' }, network: 'none' },
    });
    // The command waits for a line on stdin, then prints fast.
    await call('s', 'stream', {
      handle,
      cmd: ['sh', '-c', `read _; seq 1 ${LINES}`],
      sid: 1,
    });

    // The control plane stops reading; the command starts printing.
    ws.pause();
    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, agent.channelBuffered);
    }, 1);
    try {
      ws.send(streamFrame(STDIN, 1, Buffer.from('go\n')), { binary: true });
      // Paused for the back-pressure — or (unbounded) past the bound.
      await until('output paused or past the bound', () =>
        agent.outputPaused || agent.channelBuffered > BOUND ? true : undefined,
      );
      peak = Math.max(peak, agent.channelBuffered);
      expect(agent.channelBuffered).toBeLessThanOrEqual(BOUND);
      expect(exitedAt).toBe(-1); // the command is blocked on its pipe, not done

      // The control plane reads again: everything arrives, the exit after the last byte.
      ws.resume();
      await until('exit', () => (exitedAt >= 0 ? true : undefined));
    } finally {
      clearInterval(sampler);
    }
    expect(peak).toBeLessThanOrEqual(BOUND);
    const text = Buffer.concat(out).toString('utf8');
    const expected = `${Array.from({ length: LINES }, (_, i) => i + 1).join('\n')}\n`;
    expect(text.length).toBe(expected.length);
    expect(text === expected).toBe(true);
    expect(exitedAt).toBe(received);
    expect(frames.find((f) => f.t === 'exit')).toMatchObject({ t: 'exit', sid: 1, exitCode: 0 });
    await call('d', 'dispose', { handle });
  }, 300_000);
});
