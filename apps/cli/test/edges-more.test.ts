// More first edges against a local server that misbehaves on cue (test/fake-server.ts): a sandbox exec a
// limit stopped is a failure (`exec_stopped`) with its partial output printed; a terminal whose handshake
// hangs is bounded and cut by Ctrl-C; a --url that answers HTML is `bad_response`; the demo creates runs
// through the bounded client and stops on Ctrl-C.
import type { ServerResponse } from 'node:http';
import { PassThrough } from 'node:stream';
import { ClientError } from '@everdict/client';
import { describe, expect, it } from 'vitest';
import { Demo } from '../src/commands/demo.js';
import { makeContext } from '../src/context.js';
import { everdict, started } from './capture.js';
import { fakeServers, type Handler, json, problem, until } from './fake-server.js';

const start = fakeServers();

describe('sandbox exec answers (the ExecView shape)', () => {
  const execAnswer = (body: unknown) => async () =>
    start((req, res: ServerResponse) => {
      if (req.method === 'POST' && req.url === '/sandboxes/sb_1/exec') return json(res, 200, body);
      problem(res, 404, 'not_found');
    });

  it('a limit that stopped it (no exit code): exec_stopped, exit 1, the partial output printed', async () => {
    const { env } = await execAnswer({
      exitCode: null,
      signal: null,
      stdout: 'partial-out\n',
      stderr: 'partial-err\n',
      truncated: false,
      outcome: 'oom',
      durationMs: 12,
    })();
    const r = await everdict(['sandbox', 'exec', 'sb_1', '--', 'sh', '-c', 'hog'], env);
    expect(r.out).toBe('partial-out\n');
    expect(r.err).toContain('partial-err\n');
    expect(r.err).toMatch(/exec_stopped: the command was stopped: oom \(the sandbox's memory limit/);
    expect(r.err).not.toMatch(/undefined|null/);
    expect(r.code).toBe(1);
  });

  it("a program that is not there (the real core's answer, sessions.test.ts): run_failed naming 127", async () => {
    const { env } = await execAnswer({
      exitCode: 127,
      signal: null,
      stdout: '',
      stderr: 'bwrap: execvp nope: No such file or directory\n',
      truncated: false,
      outcome: 'not_started',
      durationMs: 4,
    })();
    const r = await everdict(['sandbox', 'exec', 'sb_1', '--', 'nope'], env);
    expect(r.out).toBe('');
    expect(r.err).toContain('bwrap: execvp nope: No such file or directory\n');
    expect(r.err).toMatch(/run_failed: the program could not be started \(exit 127\)/);
    expect(r.err).not.toMatch(/stopped|partial/);
    expect(r.code).toBe(1);
  });

  it('a limit with exit code 0 in its partial result is still a failure', async () => {
    const { env } = await execAnswer({
      exitCode: 0,
      signal: null,
      stdout: 'aaaa',
      stderr: '',
      truncated: true,
      outcome: 'output_capped',
      durationMs: 3,
    })();
    const r = await everdict(['sandbox', 'exec', 'sb_1', '--json', '--', 'yes'], env);
    expect(JSON.parse(r.out)).toMatchObject({ outcome: 'output_capped', stdout: 'aaaa' });
    expect(r.err).toMatch(/exec_stopped: the command was stopped: output_capped/);
    expect(r.code).toBe(1);
  });

  it('killed by a signal (no exit code): run_failed naming the signal', async () => {
    const { env } = await execAnswer({
      exitCode: null,
      signal: 'SIGKILL',
      stdout: '',
      stderr: '',
      truncated: false,
      outcome: 'exited',
      durationMs: 3,
    })();
    const r = await everdict(['sandbox', 'exec', 'sb_1', '--', 'sh'], env);
    expect(r.err).toMatch(/run_failed: the command was killed by SIGKILL/);
    expect(r.code).toBe(1);
  });

  it('an answer not of the documented shape is unavailable (4), a bad --timeout usage (2)', async () => {
    const { env } = await execAnswer([1, 2])();
    const r = await everdict(['sandbox', 'exec', 'sb_1', '--', 'true'], env);
    expect(r.err).toMatch(/unavailable: the exec answer is not the documented shape/);
    expect(r.code).toBe(4);
    const bad = await everdict(['sandbox', 'exec', 'sb_1', '--timeout', 'soon', '--', 'true'], env);
    expect(bad.err).toMatch(/usage: --timeout is a whole number of milliseconds/);
    expect(bad.code).toBe(2);
  });
});

describe('a --url that is not the control plane', () => {
  it('a 200 that is not JSON is bad_response (4) naming the URL, not a TypeError', async () => {
    const { s, env } = await start((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>a login page</html>');
    });
    const r = await everdict(['runs'], env);
    expect(r.err).toMatch(
      new RegExp(`unavailable 200 bad_response: the answer from ${s.url} is not JSON \\(text/html\\)`),
    );
    expect(r.err).not.toMatch(/Cannot read|TypeError/);
    expect(r.code).toBe(4);
  });
});

describe('demo', () => {
  const io = (env: Record<string, string>, signal?: AbortSignal) => ({
    stdout: new PassThrough(),
    stderr: new PassThrough(),
    stdin: new PassThrough(),
    env: { EVERDICT_DATA_DIR: '/nonexistent-everdict-data', ...env },
    ...(signal ? { signal } : {}),
  });

  it('creating a run is bounded by the request timeout and sends no `Bearer undefined`', async () => {
    const auth: (string | undefined)[] = [];
    const { s } = await start((req) => {
      auth.push(req.headers.authorization);
    });
    const ctx = makeContext({ url: s.url }, io({ EVERDICT_REQUEST_TIMEOUT_MS: '300' }));
    const err = await new Demo(ctx).create({ kind: 'analysis', subject: {} }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ClientError);
    expect((err as ClientError).code).toBe('network');
    expect(auth).toEqual([undefined]);
  }, 15_000);

  it('Ctrl-C while the experiment runs stops the demo: exit 130, the group not scored', async () => {
    const { s, env } = await start((req, res) => {
      if (req.method === 'POST' && req.url === '/harnesses') return json(res, 201, {});
      if (req.method === 'POST' && req.url === '/groups')
        return json(res, 201, { group: { id: 'grp_1' }, runs: [] });
      if (req.url === '/groups/grp_1')
        return json(res, 200, {
          id: 'grp_1',
          kind: 'experiment',
          label: 'demo',
          runIds: [],
          rollup: { total: 20, byStatus: { running: 20 }, status: 'running' },
          scoring: null,
        });
      problem(res, 404, 'not_found');
    });
    const ac = new AbortController();
    const running = started(['demo'], env, ac.signal);
    await until('the progress line', () => /settled/.test(running.printed()));
    ac.abort();
    const r = await running.ran;
    expect(r.err).toMatch(/^interrupted: /m);
    expect(r.code).toBe(130);
    expect(s.hits.some((h) => h.path.endsWith('/score'))).toBe(false);
  }, 15_000);
});

describe('sandbox shell whose terminal never upgrades', () => {
  const ticketThenHang: Handler = (req, res) => {
    if (req.method === 'POST' && req.url === '/runs/sb_1/terminal-ticket')
      return json(res, 201, { ticket: 'tkt_secret', expiresAt: new Date().toISOString() });
    problem(res, 404, 'not_found');
  };

  it('the handshake is bounded by the request timeout: exit 4', async () => {
    const { s, env } = await start(ticketThenHang);
    // Long enough that the ticket's POST is answered on a loaded machine (at 300 ms it once was not: `pnpm test`
    // beside every other package), so the timeout that fires is the handshake's.
    const r = await everdict(['sandbox', 'shell', 'sb_1'], { ...env, EVERDICT_REQUEST_TIMEOUT_MS: '1500' });
    expect(r.err).toMatch(/unavailable: terminal: .*handshake has timed out/);
    expect(r.err).not.toMatch(/tkt_secret/);
    expect(r.code).toBe(4);
    await until(
      'the upgrade socket closed',
      () => s.hits.find((h) => h.method === 'UPGRADE')?.closed === true,
    );
  }, 15_000);

  it('Ctrl-C during the handshake: exit 130 at once', async () => {
    const { s, env } = await start(ticketThenHang);
    const ac = new AbortController();
    const running = started(['sandbox', 'shell', 'sb_1'], env, ac.signal);
    await until('the upgrade request', () => s.hits.some((h) => h.method === 'UPGRADE'));
    ac.abort();
    const r = await running.ran;
    expect(r.err).toMatch(/^interrupted: /m);
    expect(r.code).toBe(130);
    await until(
      'the upgrade socket closed',
      () => s.hits.find((h) => h.method === 'UPGRADE')?.closed === true,
    );
  }, 15_000);
});
