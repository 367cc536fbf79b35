// A heartbeat whose answer hangs does not hold the next ones back: they go out on their interval (at most
// HEARTBEATS_IN_FLIGHT at once, each cut well within the lease) and renew the lease, so the interval is not
// killed at its local expiry. A renewal counts from the send of the heartbeat that brought it: an older answer
// arriving late neither moves the expiry (back, or past its own send) nor revives a lease a newer one said lost.
// The daemon speaks HTTP (HttpRunnerApi) to a real node:http control plane that holds one heartbeat's answer;
// real process-driver sandboxes.
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { ProcessDriver } from '@everdict/placement-process';
import { generateSigningKey } from '@everdict/runrecord';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { RunnerDaemon } from '../src/daemon.js';
import { EnergyMeter } from '../src/energy.js';
import { armExpiry, HeartbeatPacer, type Held, renewExpiry } from '../src/held-lease.js';
import { HttpRunnerApi } from '../src/http-api.js';
import { Lease } from '../src/protocol.js';
import { leaseOf } from './fake-control-plane.js';
import { scratch, waitFor } from './helpers.js';

const dir = scratch('runner-heartbeat-overlap-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections(); // a held answer or long-poll would hold close() forever
  await new Promise((r) => server?.close(r) ?? r(undefined));
  server = undefined;
});

const json = (res: ServerResponse, status: number, value: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
};

type Answer = { lost: string[]; draining: boolean };
/** What the control plane answers the `n`-th heartbeat naming the lease (1-based): an answer, or hold it. */
type Heartbeats = (n: number) => Answer | 'hold';

/** A control plane over node:http: grants `lease` once, answers heartbeats by `answer`, settles completions. */
async function controlPlane(lease: Lease, answer: Heartbeats) {
  const seen = {
    heartbeats: [] as { runIds: string[]; at: number }[],
    open: 0,
    maxOpen: 0,
    completed: [] as string[],
    completedAt: 0,
  };
  const held: { res?: ServerResponse; closedAt?: number } = {};
  let granted = false;
  let naming = 0;
  const handle = (req: IncomingMessage, body: string, res: ServerResponse) => {
    const url = req.url ?? '';
    if (url === '/runner/v1/leases') {
      if (granted) return; // the long-poll: nothing more comes (the runner cuts it at its drain)
      granted = true;
      return json(res, 200, { leases: [lease] });
    }
    if (url === '/runner/v1/heartbeat') {
      const runIds = (JSON.parse(body) as { leases: { runId: string }[] }).leases.map((l) => l.runId);
      seen.heartbeats.push({ runIds, at: performance.now() });
      seen.open += 1;
      seen.maxOpen = Math.max(seen.maxOpen, seen.open);
      res.on('close', () => {
        seen.open -= 1;
      });
      const a = runIds.includes(lease.runId) ? answer(++naming) : { lost: [], draining: false };
      if (a !== 'hold') return json(res, 200, a);
      held.res = res;
      res.on('close', () => {
        held.closedAt = performance.now();
      });
      return;
    }
    if (url === '/runner/v1/completions') {
      const items = (JSON.parse(body) as { items: { runId: string }[] }).items;
      seen.completed.push(...items.map((i) => i.runId));
      seen.completedAt = performance.now();
      return json(res, 200, {
        results: items.map((i) => ({ runId: i.runId, status: 200, outcome: 'settled' })),
        leases: [],
      });
    }
    if (url.includes('/artifacts')) {
      const path = new URL(url, 'http://x').searchParams.get('path');
      return json(res, 201, { path, address: `blake3:${'0'.repeat(64)}`, size: 0 });
    }
    if (url.endsWith('/events')) return json(res, 200, { accepted: true });
    json(res, 404, { status: 404, code: 'not_found' });
  };
  server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => handle(req, Buffer.concat(parts).toString('utf8'), res));
  });
  await new Promise<void>((r) => server?.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, seen, held };
}

function daemonOf(url: string) {
  const warnings: string[] = [];
  const daemon = new RunnerDaemon({
    api: new HttpRunnerApi(url, 'cred'),
    driver: new ProcessDriver({ stateDir: join(dir, 'state'), imagesDir: join(dir, 'images'), slots: 2 }),
    key: generateSigningKey(randomBytes(32)),
    meter: () => new EnergyMeter(join(dir, 'no-powercap')),
    slots: 1,
    heartbeatMs: 100,
    // The default request timeout (30 s): a heartbeat waited for that long holds every later one back.
    log: (level, msg) => {
      if (level === 'warn') warnings.push(msg);
    },
  });
  return { daemon, warnings };
}

const ended = (d: RunnerDaemon) =>
  d.ended.aborted + d.ended.completed + d.ended.failed > 0 ? true : undefined;

describe('a heartbeat whose answer hangs', () => {
  it('the heartbeats after it renew the lease: the interval runs past its leaseMs and completes', async () => {
    const leaseMs = 1500;
    const lease = Lease.parse({ ...leaseOf(0, ['sleep', '3']), leaseMs });
    const cp = await controlPlane(lease, (n) => (n === 1 ? 'hold' : { lost: [], draining: false }));
    const { daemon, warnings } = daemonOf(cp.url);
    daemon.start();
    try {
      await waitFor('the interval ended', async () => ended(daemon), 60_000);
      expect(daemon.ended).toEqual({ completed: 1, aborted: 0, failed: 0 });
      expect(cp.seen.completed).toEqual([lease.runId]);
      expect(warnings).not.toContain('lease expired without a renewal: killing its compute');
      // The held one was cut by the runner (its timeout: half the lease) while the interval still ran, and
      // never more than two heartbeats were in flight.
      expect(cp.held.closedAt).toBeDefined();
      expect(cp.held.closedAt).toBeLessThan(cp.seen.completedAt);
      expect(cp.seen.maxOpen).toBeLessThanOrEqual(2);
      expect(cp.seen.heartbeats.filter((h) => h.runIds.includes(lease.runId)).length).toBeGreaterThan(3);
    } finally {
      await daemon.drain(0);
    }
  }, 120_000);

  it('its late answer does not revive the lease a newer heartbeat answered lost', async () => {
    const lease = Lease.parse({ ...leaseOf(1, ['sleep', '60']), leaseMs: 20_000 });
    const cp = await controlPlane(lease, (n) =>
      n === 1 ? 'hold' : n === 2 ? { lost: [lease.runId], draining: false } : { lost: [], draining: false },
    );
    const { daemon, warnings } = daemonOf(cp.url);
    daemon.start();
    try {
      // The second heartbeat goes out while the first waits (well within the 10-s cut of a 20-s lease).
      await waitFor(
        'the newer heartbeat answered lost',
        async () => (warnings.includes('lease lost: killing its compute') ? true : undefined),
        8_000,
      );
      expect(cp.held.closedAt).toBeUndefined(); // the older one still waits
      json(cp.held.res as ServerResponse, 200, { lost: [], draining: false });
      await waitFor('the interval ended', async () => ended(daemon), 60_000);
      expect(daemon.ended).toEqual({ completed: 0, aborted: 1, failed: 0 });
      expect(cp.seen.completed).toEqual([]);
      expect(daemon.held).toEqual([]);
    } finally {
      await daemon.drain(0);
    }
  }, 120_000);
});

describe('renewals counted from their heartbeat’s send (fake timers)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  const heldOf = (leaseMs: number): Held => ({
    lease: Lease.parse({ ...leaseOf(2), leaseMs }),
    abort: new AbortController(),
    phase: 'executing',
    begin: () => {},
    done: Promise.resolve(),
  });

  it('an older answer arriving after a newer one moves the expiry neither back nor past its own send', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const h = heldOf(1000);
    const expired = vi.fn();
    const t0 = performance.now();
    armExpiry(h, t0, expired); // granted at 0
    vi.advanceTimersByTime(600);
    expect(renewExpiry(h, t0 + 600, expired)).toBe(true); // sent at 600, answered at once: ends at 1600
    vi.advanceTimersByTime(300);
    expect(renewExpiry(h, t0 + 200, expired)).toBe(false); // sent at 200, answered at 900: moves nothing
    vi.advanceTimersByTime(699); // 1599
    expect(expired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(expired).toHaveBeenCalledTimes(1);
  });

  it('a renewal answered late counts from its send, not its answer', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const h = heldOf(1000);
    const expired = vi.fn();
    const t0 = performance.now();
    armExpiry(h, t0, expired);
    vi.advanceTimersByTime(700);
    renewExpiry(h, t0 + 100, expired); // sent at 100, answered at 700: ends at 1100
    vi.advanceTimersByTime(400);
    expect(expired).toHaveBeenCalledTimes(1);
  });
});

describe('HeartbeatPacer (fake timers)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends on its interval whatever is in flight, at most two at once, each cut at half the lease', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    const sent: number[] = [];
    const cut: string[] = [];
    let now = 0;
    const pacer = new HeartbeatPacer({
      everyMs: 100,
      requestTimeoutMs: 30_000,
      shortestLeaseMs: () => 1000,
      // A control plane that answers nothing: each heartbeat ends only when it is cut.
      beat: (signal) =>
        new Promise<void>((_, reject) => {
          sent.push(now);
          signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        }),
      log: (msg, fields) => {
        if (msg === 'heartbeat failed') cut.push(String(fields?.err));
      },
    });
    try {
      for (now = 100; now <= 1000; now += 100) await vi.advanceTimersByTimeAsync(100);
      // Sent at 100 and 200; both wait; the ticks after are owed until the first is cut (500 ms after its send).
      expect(sent).toEqual([100, 200, 600, 700]);
      expect(pacer.inFlight).toBe(2);
      expect(cut[0]).toContain('no answer to a heartbeat within 500 ms');
    } finally {
      pacer.stop();
    }
  });
});
