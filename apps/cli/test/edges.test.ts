// The CLI's first edges against a local server that misbehaves on cue (test/fake-server.ts: real sockets,
// the control plane's answer shapes): Ctrl-C cuts a call the server never answers (130 at once, not after
// the 120 s request timeout); a `--follow` tail is closed when waiting fails; a dropped event stream is
// reopened after a growing pause (and a Retry-After), never in a hot loop, a pause Ctrl-C ends; `agent chat`
// closes its tail when looking at the turn fails. More in test/edges-more.test.ts.

import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runCli } from '../src/program.js';
import { everdict, Sink, started } from './capture.js';
import { created, type FakeServer, fakeServers, json, problem, sse, until } from './fake-server.js';

const start = fakeServers();

const RUN = '/runs/run_1';
const ANALYSIS = ['run', 'analysis', '--config', '{"fn":"echo"}'];
const hang = () => undefined; // accepts the request, never answers

describe('Ctrl-C while a call is unanswered', () => {
  it.each([
    ['a raw call (runs)', ['runs'], 'GET /runs?limit=50'],
    ['a typed-client call (run)', ANALYSIS, 'POST /runs'],
  ])(
    '%s: aborted at once, exit 130 interrupted',
    async (_what, args, route) => {
      const { s, env } = await start(hang);
      const ac = new AbortController();
      const running = everdict(args, env, ac.signal); // the default request timeout: 120 s
      await until(`${route} in flight`, () => s.of(route).length === 1);
      ac.abort();
      const r = await running;
      expect(r.err).toMatch(/^interrupted: /m);
      expect(r.err).not.toMatch(/unavailable|at .*\.ts:\d+/);
      expect(r.code).toBe(130);
      await until('the abandoned request closed', () => s.of(route)[0]?.closed === true);
    },
    15_000,
  );

  it('without Ctrl-C the request timeout still ends it: exit 4', async () => {
    const { env } = await start(hang);
    const r = await everdict(['runs'], { ...env, EVERDICT_REQUEST_TIMEOUT_MS: '300' });
    expect(r.err).toMatch(/unavailable - network: no answer/);
    expect(r.code).toBe(4);
  });
});

describe('run --follow', () => {
  it('a refused wait closes the trajectory tail (no leaked stream)', async () => {
    const { s, env } = await start((req, res) => {
      if (req.method === 'POST' && req.url === '/runs') return json(res, 201, created('run_1'));
      if (req.url === `${RUN}/trajectory/stream`) return sse(res); // held open, as for a live run
      if (req.url === `${RUN}/events`) return problem(res, 403, 'forbidden');
      problem(res, 404, 'not_found');
    });
    const r = await everdict([...ANALYSIS, '--follow'], env);
    expect(r.err).toMatch(/refused 403 forbidden/);
    expect(r.code).toBe(3);
    await until(
      'the trajectory stream closed',
      () => s.of(`GET ${RUN}/trajectory/stream`)[0]?.closed === true,
    );
  }, 15_000);
});

describe('waiting on a run whose event stream drops', () => {
  const gaps = (s: FakeServer) => {
    const at = s.of(`GET ${RUN}/events`).map((h) => h.at);
    return at.slice(1).map((t, i) => t - (at[i] as number));
  };

  it('reconnects after 250 ms, 500 ms, 1 s … (not a hot loop), then settles: exit 0', async () => {
    const { s, env } = await start((req, res) => {
      if (req.method === 'POST' && req.url === '/runs') return json(res, 201, created('run_1'));
      if (req.url === `${RUN}/events`) {
        sse(res);
        return res.end(); // dropped before any fact
      }
      if (req.url === RUN) {
        const settled = s.of(`GET ${RUN}/events`).length >= 4;
        return json(res, 200, { id: 'run_1', kind: 'analysis', status: settled ? 'succeeded' : 'running' });
      }
      problem(res, 404, 'not_found');
    });
    const r = await everdict([...ANALYSIS, '--wait'], env);
    expect(r.code, r.err).toBe(0);
    const g = gaps(s);
    expect(g).toHaveLength(3);
    // Timers fire no earlier than asked (± a millisecond of rounding).
    expect(g[0]).toBeGreaterThanOrEqual(240);
    expect(g[1]).toBeGreaterThanOrEqual(490);
    expect(g[2]).toBeGreaterThanOrEqual(990);
  }, 15_000);

  it('a good connection (one that delivered a fact) resets the pause to 250 ms', async () => {
    const { s, env } = await start((req, res) => {
      if (req.method === 'POST' && req.url === '/runs') return json(res, 201, created('run_1'));
      if (req.url === `${RUN}/events`) {
        sse(res);
        // The 4th connection is good: a fact, then it drops too.
        if (s.of(`GET ${RUN}/events`).length === 4) res.write('event: run.started\ndata: {}\n\n');
        return res.end();
      }
      if (req.url === RUN) {
        const settled = s.of(`GET ${RUN}/events`).length >= 5;
        return json(res, 200, { id: 'run_1', kind: 'analysis', status: settled ? 'succeeded' : 'running' });
      }
      problem(res, 404, 'not_found');
    });
    const r = await everdict([...ANALYSIS, '--wait'], env);
    expect(r.code, r.err).toBe(0);
    const g = gaps(s);
    expect(g).toHaveLength(4);
    expect(g[2]).toBeGreaterThanOrEqual(990); // 250, 500, 1000 …
    expect(g[3]).toBeGreaterThanOrEqual(240); // … then 250 again, not 2000
    expect(g[3]).toBeLessThan(1900);
  }, 15_000);

  it('a stream left open after its `end` event is closed by the CLI (no leaked socket)', async () => {
    const { s, env } = await start((req, res) => {
      if (req.method === 'POST' && req.url === '/runs') return json(res, 201, created('run_1'));
      if (req.url === `${RUN}/events`) {
        sse(res);
        return res.write('event: end\ndata: {}\n\n'); // and never ends it
      }
      if (req.url === RUN) return json(res, 200, { id: 'run_1', kind: 'analysis', status: 'succeeded' });
      problem(res, 404, 'not_found');
    });
    const r = await everdict([...ANALYSIS, '--wait'], env);
    expect(r.code, r.err).toBe(0);
    await until('the events stream closed', () => s.of(`GET ${RUN}/events`)[0]?.closed === true);
  }, 15_000);

  it("honours the server's Retry-After (1 s, not the 250 ms backoff)", async () => {
    const { s, env } = await start((req, res) => {
      if (req.method === 'POST' && req.url === '/runs') return json(res, 201, created('run_1'));
      if (req.url === `${RUN}/events`) {
        if (s.of(`GET ${RUN}/events`).length === 1)
          return problem(res, 503, 'database_unavailable', { 'retry-after': '1' });
        sse(res);
        return res.end('event: end\ndata: {}\n\n');
      }
      if (req.url === RUN) {
        const settled = s.of(`GET ${RUN}/events`).length >= 2;
        return json(res, 200, { id: 'run_1', kind: 'analysis', status: settled ? 'succeeded' : 'running' });
      }
      problem(res, 404, 'not_found');
    });
    const r = await everdict([...ANALYSIS, '--wait'], env);
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/run_1: database_unavailable \(fake\); reconnecting/);
    expect(gaps(s)[0]).toBeGreaterThanOrEqual(990);
  }, 15_000);

  it('Ctrl-C during the pause ends it at once: exit 130', async () => {
    const { s, env } = await start((req, res) => {
      if (req.method === 'POST' && req.url === '/runs') return json(res, 201, created('run_1'));
      if (req.url === `${RUN}/events`)
        return problem(res, 503, 'database_unavailable', { 'retry-after': '60' });
      if (req.url === RUN) return json(res, 200, { id: 'run_1', kind: 'analysis', status: 'running' });
      problem(res, 404, 'not_found');
    });
    const ac = new AbortController();
    const running = started([...ANALYSIS, '--wait'], env, ac.signal);
    await until('the pause after a refused stream', () => /reconnecting/.test(running.printed()));
    ac.abort();
    const r = await running.ran;
    expect(r.err).toMatch(/interrupted: stopped waiting: run_1 is still running/);
    expect(r.code).toBe(130);
    expect(s.of(`GET ${RUN}/events`)).toHaveLength(1);
  }, 15_000);

  it('a control plane gone for longer than the request timeout: a few attempts, then exit 4', async () => {
    const { s, env } = await start((req, res) => {
      if (req.method === 'POST' && req.url === '/runs') return json(res, 201, created('run_1'));
      req.socket.destroy(); // no answer at all
      void res;
    });
    const r = await everdict([...ANALYSIS, '--wait'], { ...env, EVERDICT_REQUEST_TIMEOUT_MS: '1200' });
    expect(r.err).toMatch(/unavailable - network/);
    expect(r.code).toBe(4);
    // 0, 250, 750 ms (then 1750 > 1200: given up) — a hot loop would make hundreds.
    const attempts = s.of(`GET ${RUN}/events`).length;
    expect(attempts).toBeGreaterThanOrEqual(2);
    expect(attempts).toBeLessThanOrEqual(5);
  }, 15_000);
});

describe('agent chat', () => {
  it('a refused look at the turn closes its trajectory tail (no leaked stream)', async () => {
    const { s, env } = await start((req, res) => {
      if (req.method === 'POST' && req.url === '/conversations')
        return json(res, 201, { group: { id: 'grp_c' } });
      if (req.method === 'POST' && req.url === '/conversations/grp_c/messages')
        return json(res, 201, { run: { id: 'run_1', status: 'queued' } });
      if (req.url === `${RUN}/trajectory/stream`) return sse(res);
      if (req.url === RUN) return problem(res, 403, 'forbidden');
      problem(res, 404, 'not_found');
    });
    const r = await everdict(['agent', 'chat', 'agent_1', '-m', 'hello'], env);
    expect(r.err).toMatch(/refused 403 forbidden/);
    expect(r.code).toBe(3);
    await until(
      'the trajectory stream closed',
      () => s.of(`GET ${RUN}/trajectory/stream`)[0]?.closed === true,
    );
  }, 15_000);

  it('Ctrl-C at the prompt of a terminal: exit 130, not a prompt that waits forever', async () => {
    const { env } = await start((req, res) => {
      if (req.method === 'POST' && req.url === '/conversations')
        return json(res, 201, { group: { id: 'grp_c' } });
      problem(res, 404, 'not_found');
    });
    // A terminal: readline takes Ctrl-C (0x03) from the raw input itself; the process gets no SIGINT.
    const stdin = Object.assign(new PassThrough(), { isTTY: true, setRawMode: () => stdin });
    const stderr = Object.assign(new Sink(), { isTTY: true });
    const running = runCli(['agent', 'chat', 'agent_1'], {
      stdout: new Sink(),
      stderr,
      stdin,
      env: { PATH: process.env.PATH ?? '', ...env },
    });
    await until('the prompt', () => stderr.text.includes('> '));
    stdin.write('\x03');
    expect(await running).toBe(130);
    expect(stderr.text).toMatch(/interrupted: stopped at the prompt of conversation grp_c/);
  }, 15_000);

  it('the end of a piped stdin at the prompt ends the chat: exit 0, not an unsettled wait', async () => {
    const { env } = await start((req, res) => {
      if (req.method === 'POST' && req.url === '/conversations')
        return json(res, 201, { group: { id: 'grp_c' } });
      problem(res, 404, 'not_found');
    });
    const stdin = new PassThrough();
    const stderr = new Sink();
    const running = runCli(['agent', 'chat', 'agent_1'], {
      stdout: new Sink(),
      stderr,
      stdin,
      env: { PATH: process.env.PATH ?? '', ...env },
    });
    await until('the prompt', () => stderr.text.includes('> '));
    stdin.end();
    expect(await running).toBe(0);
  }, 15_000);
});

describe('answers that would make the CLI wait forever', () => {
  it('an events stream whose head never comes: bounded, retried, then exit 4', async () => {
    const { s, env } = await start((req, res) => {
      if (req.method === 'POST' && req.url === '/runs') return json(res, 201, created('run_1'));
      if (req.url === RUN) return json(res, 200, { id: 'run_1', kind: 'analysis', status: 'running' });
      // GET /runs/run_1/events: taken, never answered
    });
    const r = await everdict([...ANALYSIS, '--wait'], { ...env, EVERDICT_REQUEST_TIMEOUT_MS: '400' });
    expect(r.err).toMatch(/no answer from the control plane: no answer within 400 ms/);
    expect(r.code).toBe(4);
    expect(s.of(`GET ${RUN}/events`).length).toBeGreaterThanOrEqual(1);
  }, 15_000);

  it('runs --all against a server that hands out the same cursor again: exit 4, not an endless loop', async () => {
    const { env } = await start((req, res) => {
      if (req.url?.startsWith('/runs?')) return json(res, 200, { items: [], nextCursor: 'c1' });
      problem(res, 404, 'not_found');
    });
    const r = await everdict(['runs', '--all'], env);
    expect(r.err).toMatch(/unavailable: GET \/runs handed out cursor c1 twice/);
    expect(r.code).toBe(4);
  }, 15_000);
});
