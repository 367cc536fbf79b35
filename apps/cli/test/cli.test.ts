// The CLI against a REAL control plane (the built apps/control-plane/dist/main.js as a child process on
// embedded PGlite): every command's answer and exit code — 0 ok, 1 failed / did not verify, 2 usage,
// 3 refused, 4 unavailable.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ControlPlaneProcess } from '@everdict/client/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { everdict } from './capture.js';
import { fileControlPlane } from './control-plane.js';

let cp: ControlPlaneProcess;
const controlPlane = fileControlPlane();
let env: Record<string, string>;

beforeAll(async () => {
  cp = await controlPlane.start();
  env = { EVERDICT_URL: cp.url, EVERDICT_API_KEY: cp.apiKey };
}, 300_000);
afterAll(() => controlPlane.stop());

const ECHO = '{"fn":"echo","message":"hello","value":42}';

describe('--help and usage', () => {
  it.each([
    [[]],
    [['run']],
    [['experiment']],
    [['score']],
    [['runs']],
    [['logs']],
    [['artifact']],
    [['cancel']],
    [['show']],
    [['harness', 'define']],
    [['record', 'verify']],
    [['sandbox', 'shell']],
    [['agent', 'chat']],
  ])('%j --help exits 0 with a usage', async (args) => {
    const r = await everdict([...args, '--help']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^Usage: everdict/m);
  });

  it("the filters' help names run-model's statuses and lifetimes, each one the control plane takes", async () => {
    const { RUN_STATUSES, RunLifetime } = await import('@everdict/run-model');
    const help = (await everdict(['runs', '--help'])).out.replace(/\s+/g, ' ');
    expect(help).toContain(RUN_STATUSES.join(' | '));
    expect(help).toContain(`--lifetime <lifetime> ${RunLifetime.options.join(' | ')}`);
    expect(help).not.toMatch(/service/);
    for (const lifetime of RunLifetime.options)
      expect((await everdict(['runs', '--lifetime', lifetime, '--limit', '1'], env)).code, lifetime).toBe(0);
  });

  it('usage errors exit 2', async () => {
    expect((await everdict(['nope'])).code).toBe(2);
    expect((await everdict(['record', 'verify'])).code).toBe(2); // missing <run>
    expect((await everdict(['record'])).code).toBe(2); // a group without a subcommand
    expect((await everdict(['run', 'command'], env)).code).toBe(2); // no argv
    expect((await everdict(['run', 'analysis', '--ttl', 'soon'], env)).code).toBe(2);
    expect((await everdict(['run', 'analysis', '--config', '{bad'], env)).code).toBe(2);
    expect((await everdict(['artifact', 'run_x', '-o', 'f'], env)).code).toBe(2); // -o without a path
    expect((await everdict(['artifact', 'run_x', 'a.txt', '--json'], env)).code).toBe(2); // --json lists
    expect((await everdict(['artifact', 'run_x', 'a.txt', '--dir', 'd'], env)).code).toBe(2); // --dir takes all
    expect((await everdict(['artifact', 'run_x', '--dir', 'd', '-o', 'f'], env)).code).toBe(2);
    // --dir where a directory cannot be made (under a file): refused before any call
    expect((await everdict(['artifact', 'run_x', '--dir', '/etc/hostname/d'], env)).code).toBe(2);
    // …or under /proc, where Node's recursive mkdir never returns: refused at once (directories.ts)
    expect((await everdict(['artifact', 'run_x', '--dir', '/proc/everdict-x/d'], env)).code).toBe(2);
    // -o into a directory that is not there: refused before any call (the run need not exist)
    expect((await everdict(['artifact', 'run_x', 'a.txt', '-o', '/nonexistent-dir/a.txt'], env)).code).toBe(
      2,
    );
  });
});

describe('run', () => {
  it('--wait: a succeeded run exits 0 and says so', async () => {
    const r = await everdict(['run', 'analysis', '--config', ECHO, '--wait'], env);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^run_\w+ queued/);
    expect(r.err).toMatch(/succeeded/);
  });

  it('--wait: a failed run exits 1', async () => {
    const r = await everdict(['run', 'analysis', '--config', '{"fn":"no_such_analysis"}', '--wait'], env);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/run_failed: run_\w+ ended failed/);
  });

  it('a refusal exits 3 with its code: no placement for a command, a wrong key', async () => {
    const noRunner = await everdict(['run', 'command', '--', 'echo', 'hi'], env);
    expect(noRunner.code).toBe(3);
    expect(noRunner.err).toMatch(/refused 422 no_placement/);
    const badKey = await everdict(['runs'], { ...env, EVERDICT_API_KEY: 'evd_wrong_0123456789abcdef' });
    expect(badKey.code).toBe(3);
    expect(badKey.err).toMatch(/refused 401/);
  });

  it('an envelope refusing fan-out exits 3 with the rule', async () => {
    const root = await everdict(
      ['run', 'analysis', '--config', '{"fn":"sleep","ms":20000}', '--envelope-runs', '1', '--json'],
      env,
    );
    const id = (JSON.parse(root.out) as { run: { id: string } }).run.id;
    const child = await everdict(['run', 'analysis', '--config', ECHO, '--caused-by', id], env);
    expect(child.code).toBe(3);
    expect(child.err).toMatch(/refused 402 envelope_exhausted \(rule envelope\)/);
  });

  it('logs: a run that recorded no event prints nothing (0); an unknown run is refused (3)', async () => {
    const made = await everdict(['run', 'analysis', '--config', ECHO, '--wait', '--json'], env);
    const id = (JSON.parse(made.out) as { id: string }).id;
    expect(await everdict(['logs', id], env)).toEqual({ code: 0, out: '', err: '' });
    expect(await everdict(['logs', id, '--follow'], env)).toEqual({ code: 0, out: '', err: '' });
    const unknown = await everdict(['logs', 'run_nope'], env);
    expect(unknown.code).toBe(3);
    expect(unknown.err).toMatch(/refused 404 not_found/);
  });

  it('cancel: the run and the runs it caused; cancelling it again is refused 409 (3)', async () => {
    const sleep = '{"fn":"sleep","ms":20000}';
    const root = await everdict(['run', 'analysis', '--config', sleep, '--json'], env);
    const rootId = (JSON.parse(root.out) as { run: { id: string } }).run.id;
    const child = await everdict(
      ['run', 'analysis', '--config', sleep, '--caused-by', rootId, '--json'],
      env,
    );
    const childId = (JSON.parse(child.out) as { run: { id: string } }).run.id;
    const r = await everdict(['cancel', rootId, '--reason', 'not needed'], env);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toBe(`${rootId} cancelled with 1 descendant\n  ${childId} cancelled\n`);
    const shown = await everdict(['show', childId], env);
    expect(shown.out).toMatch(new RegExp(`^${childId}  analysis  cancelled\n`));
    expect(shown.out).toMatch(new RegExp(`^ {2}caused by +${rootId} \\(depth 1\\)$`, 'm'));
    const asJson = JSON.parse((await everdict(['show', childId, '--json'], env)).out) as { id: string };
    expect(asJson).toMatchObject({ id: childId, status: 'cancelled', causalDepth: 1 });
    const listed = await everdict(['runs', '--caused-by', rootId, '--json'], env);
    expect((JSON.parse(listed.out) as { status: string }[]).map((x) => x.status)).toEqual(['cancelled']);
    const again = await everdict(['cancel', rootId], env);
    expect(again.code).toBe(3);
    expect(again.err).toMatch(/refused 409 conflict: run \w+ already cancelled/);
  });

  it('no answer exits 4', async () => {
    const r = await everdict(['runs', '--url', 'http://127.0.0.1:1'], env);
    expect(r.code).toBe(4);
    expect(r.err).toMatch(/unavailable - network/);
  });

  it('--follow tails the trajectory (spans exported for the live run) until the run settles', async () => {
    const ac = new AbortController();
    const following = everdict(
      ['run', 'analysis', '--config', '{"fn":"sleep","ms":15000}', '--follow'],
      env,
      ac.signal,
    );
    // Find the run, then export two spans into its trajectory while it runs.
    let runId: string | undefined;
    for (let i = 0; i < 200 && !runId; i++) {
      const runs = await everdict(['runs', '--json', '--status', 'running', '--kind', 'analysis'], env);
      runId = (JSON.parse(runs.out) as { id: string; subject: { config: { ms?: number } } }[]).find(
        (r) => r.subject.config.ms === 15000,
      )?.id;
      if (!runId) await new Promise((r) => setTimeout(r, 50));
    }
    expect(runId).toBeDefined();
    const now = BigInt(Date.now()) * 1_000_000n;
    const span = (n: number) => ({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: `b7ad6b71692033${String(n).padStart(2, '0')}`,
      name: `step-${n}`,
      kind: 1,
      startTimeUnixNano: String(now),
      endTimeUnixNano: String(now + 1_000_000n),
      attributes: [],
      status: {},
    });
    const res = await fetch(`${cp.url}/v1/traces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${cp.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        resourceSpans: [
          {
            resource: { attributes: [{ key: 'everdict.run_id', value: { stringValue: runId } }] },
            scopeSpans: [{ scope: { name: 'cli-test' }, spans: [span(1), span(2)] }],
          },
        ],
      }),
    });
    expect(res.status).toBe(200);
    const r = await following;
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/step-1/);
    expect(r.out).toMatch(/step-2/);
    expect(r.err).toMatch(/succeeded/);
  });
});

describe('experiment, score, runs', () => {
  let groupId = '';

  it('experiment: N runs, a progress line, a score table; exit 0', async () => {
    const r = await everdict(
      [
        'experiment',
        'analysis',
        '-n',
        '4',
        '--config',
        ECHO,
        '--grader',
        '{"type":"exit_code"}',
        '--grader',
        '{"name":"answer","type":"json_field_equals","path":"outputs.result","equals":42}',
      ],
      env,
    );
    expect(r.code).toBe(0);
    expect(r.err).toMatch(/\[#+\] 4\/4 settled/);
    expect(r.out).toMatch(/^group grp_\w+ succeeded/m);
    expect(r.out).toMatch(/^exit_code\s+100%\s+1\s+4$/m);
    expect(r.out).toMatch(/^answer\s+100%\s+1\s+4$/m);
    groupId = /group (grp_\w+)/.exec(r.out)?.[1] ?? '';
  });

  it('score --rescore links the new scoring to the last one', async () => {
    const r = await everdict(
      [
        'score',
        groupId,
        '--rescore',
        '--grader',
        '{"name":"greets","type":"output_regex","pattern":"hel+o"}',
      ],
      env,
    );
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/re-scores scoring_/);
    expect(r.out).toMatch(/^greets\s+100%/m);
    expect(r.out).not.toMatch(/failed verdict/); // every verdict passed: no listing
  });

  it("score lists each failed verdict with its run and why; show gives a run's verdicts with their details", async () => {
    const r = await everdict(
      [
        'score',
        groupId,
        '--grader',
        '{"name":"off-by-one","type":"json_field_equals","path":"outputs.result","equals":41}',
        '--grader',
        '{"name":"as-configured","type":"json_field_equals","path":"outputs.result","equalsPath":"subject.config.value"}',
      ],
      env,
    );
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/^off-by-one\s+0%\s+0\s+4$/m);
    expect(r.out).toMatch(/^as-configured\s+100%\s+1\s+4$/m);
    expect(r.out).toMatch(/^4 failed verdicts:$/m);
    expect(r.out).toMatch(/^run\s+case\s+grader\s+why$/m);
    const listed = [
      ...r.out.matchAll(/^(run_\w+)\s+-\s+off-by-one\s+outputs\.result differs from 41$/gm),
    ].map((m) => m[1]);
    expect(listed).toHaveLength(4);
    const show = await everdict(['show', listed[0]!], env);
    expect(show.code, show.err).toBe(0);
    expect(show.out).toMatch(/score\s+off-by-one 0 \(failed\): outputs\.result differs from 41$/m);
    expect(show.out).toMatch(
      /score\s+as-configured 1 \(passed\): outputs\.result equals subject\.config\.value 42$/m,
    );
    expect(show.out).toMatch(/score\s+greets 1 \(passed\): outputs\.summary matches \/hel\+o\/$/m);
  });

  it('groups: the experiment with its runs by status and its latest pass rates', async () => {
    const r = await everdict(['groups', '--kind', 'experiment'], env);
    expect(r.code, r.err).toBe(0);
    expect(r.out.split('\n')[0]).toMatch(/^group\s+kind\s+label\s+status\s+runs\s+scores\s+used\s+age$/);
    // Its latest scoring is the one scored last in this file: two graders, one at 0 %, one at 100 %.
    expect(r.out).toMatch(
      new RegExp(
        `^${groupId}\\s+experiment\\s+analysis ×4\\s+succeeded\\s+succeeded 4\\s+off-by-one 0% · as-configured 100%\\s+-\\s+\\d+[smh]$`,
        'm',
      ),
    );
    const json = JSON.parse((await everdict(['groups', '--json', '--limit', '1'], env)).out) as unknown[];
    expect(json).toHaveLength(1);
    expect((await everdict(['groups', '--limit', 'x'], env)).code).toBe(2);
  });

  it('compare: pass rates side by side; runs without case ids are not matched; an unscored group is usage', async () => {
    const same = await everdict(['compare', groupId, groupId], env);
    expect(same.code, same.err).toBe(0);
    expect(same.out).toMatch(/^off-by-one\s+0%\s+0%\s+\+0$/m);
    expect(same.out).toMatch(/^no case in both groups: cases are matched by their case id/m);
    const unscored = await everdict(
      ['experiment', 'analysis', '-n', '1', '--config', ECHO, '--no-score', '--json'],
      env,
    );
    const other = (JSON.parse(unscored.out) as { group: { id: string } }).group.id;
    const refused = await everdict(['compare', groupId, other], env);
    expect(refused.code).toBe(2);
    expect(refused.err).toContain(`${other} has no scoring: everdict score ${other} first`);
  });

  it('runs: filters, a table or --json', async () => {
    const json = await everdict(['runs', '--group', groupId, '--json'], env);
    expect(json.code).toBe(0);
    const items = JSON.parse(json.out) as { kind: string; status: string }[];
    expect(items).toHaveLength(4);
    expect(new Set(items.map((i) => i.status))).toEqual(new Set(['succeeded']));
    const tableOut = await everdict(['runs', '--status', 'failed'], env);
    expect(tableOut.out.split('\n')[0]).toMatch(/^id\s+kind\s+status\s+lifetime/);
    expect(tableOut.out).toMatch(/analysis\s+failed/);
    expect(tableOut.out).not.toMatch(/succeeded/);
  });
});

describe('the built CLI writing to a pipe', () => {
  const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
  /**
   * The built `everdict` with its stdout on a pipe this test does not read until the CLI has exited or 3 s have
   * passed: a CLI that exits with bytes still unread loses them; one that waits for its reader gets them all.
   */
  const slowlyRead = (args: string[]) =>
    new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const child = spawn(process.execPath, [MAIN, ...args], { env: { ...process.env, ...env } });
      const chunks: Buffer[] = [];
      let err = '';
      child.stderr.on('data', (c: Buffer) => {
        err += c.toString();
      });
      child.stdout.pause();
      const read = () => child.stdout.on('data', (c: Buffer) => chunks.push(c)).resume();
      const timer = setTimeout(read, 3_000);
      child.once('exit', () => {
        clearTimeout(timer);
        read();
      });
      child.on('close', (code) => resolve({ code, out: Buffer.concat(chunks).toString(), err }));
    });

  it('a reader slower than the CLI still gets every byte (process.exit dropped what the pipe had not taken)', async () => {
    const big = 'x'.repeat(100_000); // each run's JSON holds it twice: its subject and its outputs.result
    for (let i = 0; i < 2; i++) {
      const made = await everdict(
        ['run', 'analysis', '--config', JSON.stringify({ fn: 'echo', value: big }), '--wait', '--json'],
        env,
      );
      expect(made.code, made.err).toBe(0);
    }
    const r = await slowlyRead(['runs', '--kind', 'analysis', '--json', '--limit', '500']);
    expect(r.code, r.err).toBe(0);
    expect(r.out.length).toBeGreaterThan(400_000);
    const runs = JSON.parse(r.out) as { subject: { config: { value?: string } } }[];
    expect(runs.filter((x) => x.subject.config.value === big)).toHaveLength(2);
  });

  it('a reader that goes away (`| head`) ends it with 141, as SIGPIPE would, and no stack trace', async () => {
    const child = spawn(process.execPath, [MAIN, 'runs', '--json', '--limit', '500'], {
      env: { ...process.env, ...env },
    });
    let err = '';
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString();
    });
    child.stdout.once('data', () => child.stdout.destroy()); // the reader took its first bytes and left
    const code = await new Promise<number | null>((r) => child.on('close', r));
    expect(code, err).toBe(141);
    expect(err).not.toMatch(/EPIPE|at /);
  });
});

describe('experiment over a dataset (--cases)', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cli-cases-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string) => {
    writeFileSync(path.join(dir, name), text);
    return path.join(dir, name);
  };
  /** The cases the group's runs were given (an analysis run's `config.case`), in a stable order. */
  const casesOf = async (out: string) => {
    const id = (JSON.parse(out) as { group: { id: string } }).group.id;
    const runs = await everdict(['runs', '--group', id, '--json'], env);
    return (JSON.parse(runs.out) as { subject: { config: { case: { q: number } } } }[])
      .map((r) => r.subject.config.case)
      .sort((a, b) => a.q - b.q);
  };
  const experiment = (cases: string, stdin?: string) =>
    everdict(
      ['experiment', 'analysis', '--config', ECHO, '--cases', cases, '--no-score', '--json'],
      env,
      undefined,
      stdin,
    );

  it('one run per case: JSON Lines (blank lines skipped), a JSON array, or stdin', async () => {
    const lines = await experiment(file('cases.jsonl', '{"id":"a","q":1}\n\n{"id":"b","q":2}\n{"q":3}\n'));
    expect(lines.code, lines.err).toBe(0);
    expect(lines.err).toMatch(/: 3 analysis runs queued/);
    expect(await casesOf(lines.out)).toEqual([{ id: 'a', q: 1 }, { id: 'b', q: 2 }, { q: 3 }]);
    const array = await experiment(file('cases.json', ' [{"q":4},{"q":5}]'));
    expect(array.code, array.err).toBe(0);
    expect(await casesOf(array.out)).toEqual([{ q: 4 }, { q: 5 }]);
    const stdin = await experiment('-', '{"q":6}\n');
    expect(stdin.code, stdin.err).toBe(0);
    expect(await casesOf(stdin.out)).toEqual([{ q: 6 }]);
    expect((JSON.parse(stdin.out) as { group: { label: string } }).group.label).toBe('analysis over stdin');
  });

  it('a bad dataset, or -n with --cases, is usage (2) naming it, and creates nothing', async () => {
    const before = await everdict(['runs', '--json', '--limit', '500'], env);
    const bad = await experiment(file('bad.jsonl', '{"q":1}\n{oops\n'));
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('bad.jsonl:2: not JSON');
    const scalars = await experiment(file('scalars.json', '[1,2]'));
    expect(scalars.code).toBe(2);
    expect(scalars.err).toMatch(/each a JSON object/);
    expect((await experiment(file('empty.jsonl', '\n'))).code).toBe(2);
    expect((await experiment(path.join(dir, 'missing.jsonl'))).err).toMatch(/ENOENT/);
    const both = await everdict(['experiment', 'analysis', '-n', '2', '--cases', '-'], env);
    expect(both.code).toBe(2);
    expect((await everdict(['experiment', 'analysis', '--config', ECHO], env)).code).toBe(2);
    // A grader the scoring would refuse is refused before the runs are made, not after they all ran.
    for (const [grader, why] of [
      ['{"type":"exact_match"}', /^usage: --grader: grader 1 \(type\): Invalid discriminator value/m],
      [
        '{"type":"json_field_equals","path":"outputs.result"}',
        /^usage: --grader: grader 1 \(equals\): json_field_equals needs exactly one of equals/m,
      ],
    ] as const) {
      const g = await everdict(
        ['experiment', 'analysis', '-n', '2', '--config', ECHO, '--grader', grader],
        env,
      );
      expect(g.code, g.err).toBe(2);
      expect(g.err).toMatch(why);
    }
    const after = await everdict(['runs', '--json', '--limit', '500'], env);
    expect(JSON.parse(after.out)).toHaveLength((JSON.parse(before.out) as unknown[]).length);
  });
});

describe('harness', () => {
  it('define: defined, the same again a no-op, a different one 409 (exit 3); list shows it', async () => {
    const define = ['harness', 'define', 'cli-h@1', '--image', 'default', '--', 'sh', '-c', 'true'];
    const first = await everdict(define, env);
    expect(first.code, first.err).toBe(0);
    expect(first.out).toBe('harness cli-h@1 defined\n');
    expect((await everdict(define, env)).out).toBe('harness cli-h@1 already defined, identically\n');
    const other = await everdict(['harness', 'define', 'cli-h@1', '--', 'sh', '-c', 'false'], env);
    expect(other.code).toBe(3);
    expect(other.err).toMatch(/refused 409 harness_conflict/);
    const listed = await everdict(['harness', 'list', '--json'], env);
    expect(JSON.parse(listed.out)).toContainEqual(
      expect.objectContaining({ id: 'cli-h', version: '1', image: 'default', command: ['sh', '-c', 'true'] }),
    );
    expect((await everdict(['harness', 'list'], env)).out).toMatch(
      /^cli-h@1\s+default\s+\["sh","-c","true"\]$/m,
    );
  });

  it('no command, or a ref without a version, is usage (2)', async () => {
    expect((await everdict(['harness', 'define', 'cli-h@2'], env)).code).toBe(2);
    expect((await everdict(['harness', 'define', 'cli-h', '--', 'true'], env)).code).toBe(2);
    expect((await everdict(['harness', 'define', 'cli-h@', '--', 'true'], env)).code).toBe(2);
    expect((await everdict(['harness', 'list', '--json'], env)).out).not.toMatch(/"version":"2"/);
  });
});

describe('trigger (over the subscriptions routes)', () => {
  it('a trigger on failed runs fires once per failure, caused by it; disable stops it; list and delete', async () => {
    const made = await everdict(
      [
        'trigger',
        'on',
        'run.settled',
        'analysis',
        '--name',
        'on-failure',
        '--filter',
        '{"outcome":"failed"}',
        '--config',
        '{"fn":"echo","message":"a run failed"}',
      ],
      env,
    );
    expect(made.code, made.err).toBe(0);
    const id =
      /^trigger (sub_\w+) \(on-failure\) on run\.settled \{"outcome":"failed"\} → analysis run$/m.exec(
        made.out,
      )?.[1];
    expect(id, made.out).toBeDefined();
    const failing = await everdict(['run', 'analysis', '--config', '{"fn":"fail"}', '--wait', '--json'], env);
    expect(failing.code).toBe(1);
    const failedId = (JSON.parse(failing.out) as { id: string }).id;
    // The run it fires is caused by the failed one (its event's run), as `runs --caused-by` finds it.
    const fired = async () => {
      const r = await everdict(['runs', '--caused-by', failedId, '--json'], env);
      return JSON.parse(r.out) as { id: string; origin: { cause: string; subscriptionId?: string } }[];
    };
    await expect.poll(async () => (await fired()).length, { timeout: 30_000 }).toBe(1);
    expect((await fired())[0]?.origin).toMatchObject({ subscriptionId: id });
    // Its firings: the failure it matched, and the run it made (that run succeeded: not matched).
    const firings = await everdict(['trigger', 'firings', id!], env);
    expect(firings.code, firings.err).toBe(0);
    expect(firings.out).toMatch(/^event\s+at\s+outcome\s+run, or why not$/m);
    expect(firings.out.trim().split('\n')).toHaveLength(2);
    expect(firings.out).toMatch(
      new RegExp(`^\\d+\\s+\\d+s ago\\s+created\\s+${(await fired())[0]?.id}$`, 'm'),
    );
    const listed = await everdict(['trigger', 'list'], env);
    expect(listed.out).toMatch(/^trigger\s+name\s+when\s+runs\s+enabled\s+last fired\s+next$/m);
    expect(listed.out).toMatch(
      new RegExp(
        `^${id}\\s+on-failure\\s+on run\\.settled \\{"outcome":"failed"\\}\\s+analysis\\s+yes\\s+\\d+s ago\\s+-$`,
        'm',
      ),
    );
    // A schedule says when it fires next (an hourly one: within the hour), until it is disabled.
    const hourly = await everdict(['trigger', 'every', '0 * * * *', 'analysis', '--name', 'hourly'], env);
    const hourlyId = /^trigger (sub_\w+) /m.exec(hourly.out)?.[1];
    expect(hourlyId, hourly.err).toBeDefined();
    expect((await everdict(['trigger', 'list'], env)).out).toMatch(
      new RegExp(
        `^${hourlyId}\\s+hourly\\s+every 0 \\* \\* \\* \\* \\(UTC\\)\\s+analysis\\s+yes\\s+never\\s+in (\\d+m )?\\d+s$`,
        'm',
      ),
    );
    expect((await everdict(['trigger', 'disable', hourlyId!], env)).code).toBe(0);
    expect((await everdict(['trigger', 'list'], env)).out).toMatch(
      new RegExp(`^${hourlyId}.*\\s+never\\s+-$`, 'm'),
    );
    expect((await everdict(['trigger', 'delete', hourlyId!], env)).code).toBe(0);
    // Disabled, the next failure fires nothing. Proven by a witness: a second trigger on the same events, which
    // fires for that failure once the consumer has passed it — and only the witness's run follows it.
    expect((await everdict(['trigger', 'disable', id!], env)).out).toMatch(
      /^trigger sub_\w+ \(on-failure\) disabled$/m,
    );
    expect((await everdict(['trigger', 'list'], env)).out).toMatch(
      new RegExp(`^${id}.*\\s+no \\(disabled\\)\\s+`, 'm'),
    );
    // A trigger on failed runs (echo), as JSON: the witness, and one whose runs may reach no depth.
    const onFailure = async (name: string, ...more: string[]) =>
      JSON.parse(
        (
          await everdict(
            ['trigger', 'on', 'run.settled', 'analysis', '--name', name, '--filter', '{"outcome":"failed"}']
              .concat(['--config', '{"fn":"echo"}', '--json'])
              .concat(more),
            env,
          )
        ).out,
      ) as { id: string };
    const witness = await onFailure('witness');
    // It matches the next failure, and the gate refuses its run.
    const shallow = await onFailure('shallow', '--max-depth', '0');
    const again = await everdict(['run', 'analysis', '--config', '{"fn":"fail"}', '--wait', '--json'], env);
    const againId = (JSON.parse(again.out) as { id: string }).id;
    const after = async () =>
      JSON.parse((await everdict(['runs', '--caused-by', againId, '--json'], env)).out) as {
        origin: { subscriptionId?: string };
      }[];
    await expect.poll(async () => (await after()).length, { timeout: 30_000 }).toBeGreaterThan(0);
    expect((await after()).map((r) => r.origin.subscriptionId)).toEqual([witness.id]);
    const refused = async () => (await everdict(['trigger', 'firings', shallow.id], env)).out;
    await expect
      .poll(refused, { timeout: 30_000 })
      .toMatch(/^\d+\s+\d+s ago\s+refused\s+capacity_exceeded \(depth\): .*depth/m);
    expect((await everdict(['trigger', 'delete', shallow.id], env)).code).toBe(0);
    const deleted = await everdict(['trigger', 'delete', id!], env);
    expect(deleted.out).toMatch(/deleted \(the runs it made stay\)/);
    expect((await everdict(['trigger', 'list', '--json'], env)).out).not.toContain(id!);
    expect(await fired()).toHaveLength(1); // the run it made stays
    expect((await everdict(['trigger', 'delete', witness.id], env)).code).toBe(0);
  });

  it('refuses a bad trigger before or at the call, saving nothing', async () => {
    const before = (await everdict(['trigger', 'list', '--json'], env)).out;
    for (const [args, code, why] of [
      [['on', 'run.settled', 'analysis'], 2, /--name/],
      [['on', 'run.settled', 'command', '--name', 'x'], 2, /give the argv after `--`/],
      [['on', 'run.settled', 'analysis', '--name', 'x', '--filter', '[1]'], 2, /--filter is a JSON object/],
      [
        ['on', 'run.settled', 'analysis', '--name', 'x', '--max-depth', '99'],
        2,
        /--max-depth is a whole number ≤ 32/,
      ],
      [['every', 'every tuesday', 'analysis', '--name', 'x'], 3, /bad cron "every tuesday"/],
      [['every', '0 3 * * *', 'analysis', '--name', 'x', '--timezone', 'Mars/Olympus'], 3, /timezone/],
    ] as const) {
      const r = await everdict(['trigger', ...args], env);
      expect(r.code, `${args.join(' ')}: ${r.err}`).toBe(code);
      expect(r.err).toMatch(why);
    }
    expect((await everdict(['trigger', 'list', '--json'], env)).out).toBe(before);
    expect((await everdict(['trigger', 'disable', 'sub_nope'], env)).code).toBe(3);
  });
});

describe('runner and queue', () => {
  const RUNNER = fileURLToPath(new URL('../../runner/dist/cli.js', import.meta.url));
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cli-runner-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('runner token pairs a real runner (everdict-runner pair); list shows it; drain, then revoke', async () => {
    const token = await everdict(['runner', 'token'], env);
    expect(token.code, token.err).toBe(0);
    const value = /^(evp_\S+)$/m.exec(token.out)?.[1];
    expect(value, token.out).toBeDefined();
    expect(token.out).toContain(`everdict-runner pair ${cp.url} ${value} --name <name> --slots <n>`);
    const paired = spawnSync(
      process.execPath,
      [RUNNER, 'pair', cp.url, value!, '--name', 'cli-paired', '--slots', '2', '--state-dir', dir],
      { encoding: 'utf8' },
    );
    expect(paired.status, paired.stderr).toBe(0);
    const list = await everdict(['runner', 'list'], env);
    const row =
      /^(rnr_\w+)\s+cli-paired\s+active\s+tenant\s+command,eval\S*\s+process\s+2\s+0\s+never$/m.exec(
        list.out,
      );
    expect(row, list.out).not.toBeNull();
    const id = row![1]!;
    // A token is single use: the same one again is refused by the control plane (the runner exits non-zero).
    const twice = spawnSync(
      process.execPath,
      [RUNNER, 'pair', cp.url, value!, '--name', 'again', '--state-dir', path.join(dir, 'again')],
      { encoding: 'utf8' },
    );
    expect(twice.status).not.toBe(0);
    expect((await everdict(['runner', 'drain', id], env)).out).toMatch(
      /^runner rnr_\w+ \(cli-paired\) draining$/m,
    );
    expect((await everdict(['runner', 'revoke', id], env)).out).toMatch(
      /^runner rnr_\w+ \(cli-paired\) revoked$/m,
    );
    const json = JSON.parse((await everdict(['runner', 'list', '--json'], env)).out) as {
      id: string;
      state: string;
    }[];
    expect(json.find((r) => r.id === id)?.state).toBe('revoked');
    const nobody = await everdict(['runner', 'drain', 'rnr_nope'], env);
    expect(nobody.code).toBe(3);
    expect(nobody.err).toMatch(/404 not_found/);
  });

  it("a shared runner is the operator's: --operator pairs, drains and revokes it with the service token", async () => {
    const operatorEnv = { ...env, EVERDICT_INTERNAL_TOKEN: cp.internalToken };
    // Without a service token at hand, --operator is a usage error before any call.
    expect((await everdict(['runner', 'token', '--operator'], env)).code).toBe(2);
    const token = await everdict(['runner', 'token', '--operator'], operatorEnv);
    expect(token.code, token.err).toBe(0);
    expect(token.out).toMatch(/^pairing token for a shared runner: every tenant /m);
    const value = /^(evp_\S+)$/m.exec(token.out)?.[1];
    const paired = spawnSync(
      process.execPath,
      [RUNNER, 'pair', cp.url, value!, '--name', 'cli-shared', '--state-dir', path.join(dir, 'shared')],
      { encoding: 'utf8' },
    );
    expect(paired.status, paired.stderr).toBe(0);
    const list = await everdict(['runner', 'list'], env);
    const id = /^(rnr_\w+)\s+cli-shared\s+active\s+shared\s/m.exec(list.out)?.[1];
    expect(id, list.out).toBeDefined();
    // The tenant's admin key may not drain it: refused, naming the door and the flag; nothing changed.
    const refused = await everdict(['runner', 'drain', id!], env);
    expect(refused.code).toBe(3);
    expect(refused.err).toMatch(
      /403 forbidden: runner rnr_\w+ is shared .*\(everdict runner drain rnr_\w+ --operator\)/,
    );
    expect((await everdict(['runner', 'list'], env)).out).toMatch(
      new RegExp(`^${id}\\s+cli-shared\\s+active\\s`, 'm'),
    );
    expect((await everdict(['runner', 'drain', id!, '--operator'], operatorEnv)).out).toMatch(
      /^runner rnr_\w+ \(cli-shared\) draining$/m,
    );
    expect((await everdict(['runner', 'revoke', id!, '--operator'], operatorEnv)).out).toMatch(
      /^runner rnr_\w+ \(cli-shared\) revoked$/m,
    );
  });

  it('queue: running, the caps, and an envelope with what it spent', async () => {
    const r = await everdict(
      ['run', 'analysis', '--config', '{"fn":"sleep","ms":30000}', '--envelope-runs', '4', '--json'],
      env,
    );
    const id = (JSON.parse(r.out) as { run: { id: string } }).run.id;
    try {
      await expect
        .poll(async () => (await everdict(['queue'], env)).out, { timeout: 30_000 })
        .toMatch(/^running {2}[1-9]\d* of \d+$/m);
      const q = await everdict(['queue'], env);
      expect(q.out).toMatch(/^queued {3}\d+ of \d+ \(interactive \d+, background \d+, batch \d+\)/m);
      expect(q.out).toMatch(/^sessions \d+ held open$/m);
      expect(q.out).toMatch(new RegExp(`^env_\\w+\\s+${id}\\s+1/4\\s+0/-\\s+0/-\\s+1/\\d+$`, 'm'));
      const json = JSON.parse((await everdict(['queue', '--json'], env)).out) as {
        queue: { caps: { maxConcurrent: number } };
        envelopes: { openedBy: string | null }[];
      };
      expect(json.queue.caps.maxConcurrent).toBeGreaterThan(0);
      expect(json.envelopes.some((e) => e.openedBy === id)).toBe(true);
    } finally {
      await everdict(['cancel', id], env);
    }
  });
});

describe('keys', () => {
  it('create mints a member key that works; a member cannot mint; revoke makes it 401', async () => {
    const made = await everdict(['keys', 'create', '--label', 'cli-test'], env);
    expect(made.code, made.err).toBe(0);
    const key = made.out.trim();
    const id = /^key (key_\w+) \(member\) — shown once/m.exec(made.err)?.[1];
    expect(id, made.err).toBeDefined();
    const member = { ...env, EVERDICT_API_KEY: key };
    expect((await everdict(['runs', '--limit', '1'], member)).code).toBe(0);
    const minted = await everdict(['keys', 'create'], member);
    expect(minted.code).toBe(3);
    expect(minted.err).toMatch(/403 forbidden/);
    const listed = await everdict(['keys', 'list'], env);
    expect(listed.out).toMatch(new RegExp(`^${id}\\s+member\\s+cli-test\\s+\\S+\\s+-$`, 'm'));
    expect((await everdict(['keys', 'revoke', id!], env)).out).toMatch(
      /revoked at \S+: its next call is 401/,
    );
    const refused = await everdict(['runs', '--limit', '1'], member);
    expect(refused.code).toBe(3);
    expect(refused.err).toMatch(/401/);
    expect((await everdict(['keys', 'list'], env)).out).toMatch(
      new RegExp(`^${id}\\s+member\\s+cli-test\\s+\\S+\\s+20\\d\\d-`, 'm'),
    );
  });
});

describe('record verify', () => {
  let runId = '';
  beforeAll(async () => {
    const r = await everdict(['run', 'analysis', '--config', ECHO, '--wait', '--json'], env);
    runId = (JSON.parse(r.out) as { id: string }).id;
  });

  it('verifies locally and names the signer from GET /keys', async () => {
    const r = await everdict(['record', 'verify', runId, '--trust-listed'], env);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/verified/);
    expect(r.out).toMatch(/signed by [0-9a-f]{16}… \(control-plane\)/);
    expect(r.out).toMatch(/account\s+non_blocking/);
    expect(r.out).toMatch(/binds\s+this run/);
  });

  it('a server answering with another run’s (valid) record: not this run’s record (exit 1)', async () => {
    const other = await everdict(
      ['run', 'analysis', '--config', '{"fn":"echo","other":true}', '--wait', '--json'],
      env,
    );
    const otherId = (JSON.parse(other.out) as { id: string }).id;
    // A proxy in front of the real control plane that swaps one route's answer: the record of `otherId`.
    const lying = createServer(async (req, res) => {
      const swapped = (req.url ?? '/').replace(`/runs/${runId}/record`, `/runs/${otherId}/record`);
      const upstream = await fetch(`${cp.url}${swapped}`, {
        method: req.method ?? 'GET',
        headers: { authorization: req.headers.authorization ?? '' },
      });
      res.writeHead(upstream.status, {
        'content-type': upstream.headers.get('content-type') ?? 'application/json',
      });
      res.end(Buffer.from(await upstream.arrayBuffer()));
    });
    await new Promise<void>((r) => lying.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(lying.address() as AddressInfo).port}`;
      const r = await everdict(['record', 'verify', runId, '--json'], { ...env, EVERDICT_URL: url });
      expect(r.code).toBe(1);
      // The record itself verifies (it is a good record — of another run); it does not bind this run.
      expect(JSON.parse(r.out)).toMatchObject({ ok: true, binds: false });
      const plain = await everdict(['record', 'verify', runId], { ...env, EVERDICT_URL: url });
      expect(plain.code).toBe(1);
      expect(plain.out).toMatch(/DOES NOT VERIFY as this run's record/);
      // Straight from the control plane the same run binds.
      const honest = await everdict(['record', 'verify', runId, '--json'], env);
      expect(honest.code).toBe(0);
      expect(JSON.parse(honest.out)).toMatchObject({ ok: true, binds: true });
    } finally {
      lying.closeAllConnections();
      await new Promise<void>((r) => lying.close(() => r()));
    }
  });

  it('--log-key proves it in the head log with the runrecord CLI; another key, or a witness that never cosigned, does not', async () => {
    const { public_key: logKey } = (await (await fetch(`${cp.url}/log/key`)).json()) as {
      public_key: string;
    };
    // Its leaves are in a signed tree head within a pass and the STH interval (the CLI waits for that, ≤ 10 s).
    const proven = await everdict(['record', 'verify', runId, '--log-key', logKey], env);
    expect(proven.code, proven.err).toBe(0);
    expect(proven.out).toMatch(new RegExp(`^${runId}: verified$`, 'm'));
    expect(proven.out).toMatch(
      /^ {2}log {7}in the head log: 2 leaves in the signed tree of size \d+ \(root [0-9a-f]{16}…\), 0 witnesses$/m,
    );
    const json = await everdict(['record', 'verify', runId, '--log-key', logKey, '--json'], env);
    expect(JSON.parse(json.out)).toMatchObject({
      ok: true,
      binds: true,
      log: { ok: true, log: { leaves: 2 } },
    });
    const stranger = 'ab'.repeat(32);
    const forged = await everdict(['record', 'verify', runId, '--log-key', stranger], env);
    expect(forged.code).toBe(1);
    expect(forged.out).toMatch(new RegExp(`^${runId}: its record verifies, but NOT in the head log$`, 'm'));
    expect(forged.out).toMatch(/^ {2}log {7}DOES NOT VERIFY BadSignature/m);
    expect(forged.err).toMatch(/not_verified: .* is not proven in the head log \(BadSignature\)/);
    const unwitnessed = await everdict(['record', 'verify', runId, '--witness-key', stranger], env);
    expect(unwitnessed.code).toBe(1);
    expect(unwitnessed.out).toMatch(/DOES NOT VERIFY InsufficientWitnesses/);
    expect((await everdict(['record', 'verify', runId, '--log-key', 'nope'], env)).code).toBe(2);
  });

  it('--json prints the runrecord verdict; a key that did not sign does not verify (exit 1)', async () => {
    const keys = (await (await fetch(`${cp.url}/keys`)).json()) as { keys: { key: string }[] };
    const good = await everdict(
      ['record', 'verify', runId, '--json', '--trust-key', keys.keys[0]?.key ?? ''],
      env,
    );
    expect(good.code).toBe(0);
    expect(JSON.parse(good.out)).toMatchObject({ ok: true, phase: 'closed' });
    const stranger = 'ab'.repeat(32);
    const bad = await everdict(['record', 'verify', runId, '--trust-key', stranger], env);
    expect(bad.code).toBe(1);
    expect(bad.out).toMatch(/DOES NOT VERIFY/);
  });

  it('an unknown run is refused 404 (exit 3)', async () => {
    const r = await everdict(['record', 'verify', 'run_nope'], env);
    expect(r.code).toBe(3);
    expect(r.err).toMatch(/404 not_found/);
  });
});

describe('sandbox (over the sessions routes) and agent chat', () => {
  it('opens a session, executes in it and closes it; agent chat answers without a crash', async () => {
    const open = await everdict(['sandbox', 'open', '--ttl', '600', '--idle', '300', '--json'], env);
    expect(open.code).toBe(0);
    const id = (JSON.parse(open.out) as { run: { id: string } }).run.id;
    const expiresAt = (JSON.parse(open.out) as { run: { expiresAt: string } }).run.expiresAt;
    // `show` of a live session says when the reaper closes it.
    expect((await everdict(['show', id], env)).out).toContain(`· expires ${expiresAt}`);
    // Listed with its time left (GET /sandboxes), and shown with its idle timeout running (GET /sandboxes/:id).
    const listed = await everdict(['sandbox', 'list'], env);
    expect(listed.code, listed.err).toBe(0);
    expect(listed.out).toMatch(/^sandbox +state +image +age +ttl left +idle left +drawn$/m);
    expect(listed.out).toMatch(
      new RegExp(`^${id} +open +default +\\d+s +\\d+m \\d+s +\\d+m \\d+s +\\$\\d+\\.\\d{4}$`, 'm'),
    );
    const shown = await everdict(['sandbox', 'show', id], env);
    expect(shown.code, shown.err).toBe(0);
    expect(shown.out).toMatch(new RegExp(`^${id} {2}sandbox {2}open \\(running\\)$`, 'm'));
    expect(shown.out).toMatch(new RegExp(`^ {2}expires +${expiresAt} \\(in \\d+m \\d+s\\)$`, 'm'));
    expect(shown.out).toMatch(/^ {2}idle left +\d+m \d+s of 5m 0s; last activity \d+s ago$/m);
    expect(shown.out).toMatch(/^ {2}drawn +\$\d+\.\d{4} at \$\d+\.\d{4}\/h, \d+\.\d J \(estimated\)$/m);
    const exec = await everdict(
      ['sandbox', 'exec', id, '--json', '--', 'sh', '-c', 'echo hi-from-sandbox'],
      env,
    );
    expect(exec.code).toBe(0);
    expect(exec.out).toContain('hi-from-sandbox');
    expect(exec.err).not.toMatch(/truncated/);
    // More than the exec output cap (1 MiB): printed as far as it was kept, and said so on stderr.
    const big = await everdict(
      ['sandbox', 'exec', id, '--', 'sh', '-c', 'head -c 3000000 /dev/zero | tr "\\0" a'],
      env,
    );
    expect(big.code).toBe(0);
    expect(big.out.length).toBeLessThan(3_000_000);
    expect(big.err).toMatch(/output truncated at the output cap/);
    // A limit that stopped the command is a failure naming the limit, its partial output printed — not
    // `the command exited 137` (or `exited null`, or 0 when the partial result says 0).
    const stopped = await everdict(
      [
        'sandbox',
        'exec',
        id,
        '--timeout',
        '1000',
        '--',
        'sh',
        '-c',
        'echo partial-before-the-limit; sleep 30',
      ],
      env,
    );
    expect(stopped.out).toContain('partial-before-the-limit');
    expect(stopped.err).toMatch(/exec_stopped: the command was stopped: timeout \(its time limit ran out/);
    expect(stopped.code).toBe(1);
    const failed = await everdict(
      ['sandbox', 'exec', id, '--', 'sh', '-c', 'echo to-stderr >&2; exit 3'],
      env,
    );
    expect(failed.code).toBe(1);
    // Parked: its idle timeout stops, its snapshot is named; closed: no longer listed.
    expect((await everdict(['sandbox', 'suspend', id], env)).code).toBe(0);
    const parked = await everdict(['sandbox', 'show', id], env);
    expect(parked.out).toMatch(
      /^ {2}idle left +- \(parked: its idle timeout of 5m 0s runs again once resumed\)/m,
    );
    expect(parked.out).toMatch(/^ {2}snapshot +[0-9a-f]{64}$/m);
    expect((await everdict(['sandbox', 'list'], env)).out).toMatch(
      new RegExp(`^${id} +parked +default .* - +`, 'm'),
    );
    expect((await everdict(['sandbox', 'resume', id], env)).code).toBe(0);
    const close = await everdict(['sandbox', 'close', id], env);
    expect(close.code).toBe(0);
    const gone = await everdict(['sandbox', 'list'], env);
    expect(gone.out).not.toContain(id);
    expect((await everdict(['sandbox', 'show', 'run_nope'], env)).code).toBe(3);
    // The session's trajectory read back as a transcript: each exec's argv, its output, why it failed.
    const logs = await everdict(['logs', id], env);
    expect(logs.code, logs.err).toBe(0);
    expect(logs.out).toMatch(/^\$ sh -c 'echo hi-from-sandbox'\nhi-from-sandbox\n\$ sh -c 'head -c 3000000/m);
    expect(logs.out).toMatch(
      /^\$ sh -c 'echo partial-before-the-limit; sleep 30'\npartial-before-the-limit\n\[the command was stopped: timeout \(its time limit ran out after \d+ ms\); the output above is partial\]$/m,
    );
    expect(logs.out).toMatch(/^\$ sh -c 'echo to-stderr >&2; exit 3'\n\[the command exited 3\]$/m);
    expect(logs.err).toMatch(/^to-stderr$/m);
    expect(logs.err).toMatch(/^\[output truncated at the output cap\]$/m);
    expect(logs.out).not.toMatch(/tool_call|tool_result/); // every exec paired with its result
    const bad = await everdict(['sandbox', 'open', '--idle', 'soon'], env);
    expect(bad.code).toBe(2);
    const chat = await everdict(['agent', 'chat', 'releaser', '-m', 'hello'], env);
    expect([0, 1, 3]).toContain(chat.code);
  });
});

describe('with the agent service: agent chat and the demo', () => {
  // The agent service as `everdict start` runs it: the built everdict-agent, `serve`, a scripted model that
  // asks for approval and then answers with what it got. A real child process, stopped by its pid.
  let agent: ChildProcess | undefined;
  let agentLog = '';
  const dir = mkdtempSync(path.join(os.tmpdir(), 'everdict-cli-agent-'));
  beforeAll(() => {
    const script = path.join(dir, 'script.json');
    writeFileSync(
      script,
      JSON.stringify([
        { toolCalls: [{ tool: 'ask_approval', args: { question: 'May I ship this release?' } }] },
        { content: 'Approval answered: {{last_tool_result}}' },
      ]),
    );
    const main = fileURLToPath(new URL('../../agent/dist/cli.js', import.meta.url));
    agent = spawn(
      process.execPath,
      [
        main,
        'serve',
        '--url',
        cp.url,
        '--token',
        cp.internalToken,
        '--script',
        script,
        // A paired agent host, as `everdict start` runs it: its own key signs each interval.
        '--pair',
        '--state-dir',
        path.join(dir, 'host'),
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    agent.stdout?.on('data', (c: Buffer) => {
      agentLog += c.toString();
    });
    agent.stderr?.on('data', (c: Buffer) => {
      agentLog += c.toString();
    });
  });
  afterAll(async () => {
    if (agent?.pid && agent.exitCode === null) {
      const gone = new Promise((r) => agent?.once('exit', r));
      agent.kill('SIGTERM');
      await gone;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('agent define refuses bad flags before any call; define and list show the agent', async () => {
    const before = (await fetch(`${cp.url}/agents`, {
      headers: { authorization: `Bearer ${cp.apiKey}` },
    }).then((r) => r.json())) as { items: unknown[] };
    for (const [args, why] of [
      [
        ['--model', 'scripted', '--tool', 'rm_rf'],
        /--tool rm_rf: one of run_command, start_experiment, read_run, ask_approval/,
      ],
      [['--tool', 'read_run'], /give --model/],
      [['--model', 'scripted', '--envelope-runs', '-1'], /--envelope-runs is an integer ≥ 0/],
      [['--model', 'scripted', '--envelope-usd', 'lots'], /--envelope-usd is dollars ≥ 0/],
      [['--model', 'scripted', '--max-steps', '0'], /--max-steps is an integer ≥ 1/],
      [['--model', 'scripted', '--system', 'a', '--system-file', 'b'], /not both/],
      [
        ['--model', 'scripted', '--system-file', path.join(dir, 'no-such-prompt')],
        /--system-file .*no-such-prompt: ENOENT/,
      ],
    ] as const) {
      const r = await everdict(['agent', 'define', 'refused', ...args], env);
      expect(r.code, r.err).toBe(2);
      expect(r.err).toMatch(why);
    }
    const after = (await fetch(`${cp.url}/agents`, {
      headers: { authorization: `Bearer ${cp.apiKey}` },
    }).then((r) => r.json())) as { items: unknown[] };
    expect(after.items).toHaveLength(before.items.length); // nothing created by a refusal
    const prompt = path.join(dir, 'prompt.txt');
    writeFileSync(prompt, 'You answer in haiku.\n');
    const made = await everdict(
      [
        'agent',
        'define',
        'poet',
        '--model',
        'scripted',
        '--system-file',
        prompt,
        '--tool',
        'read_run',
        '--tool',
        'run_command',
        '--envelope-runs',
        '3',
        '--envelope-usd',
        '0.5',
        '--max-steps',
        '4',
        '--json',
      ],
      env,
    );
    expect(made.code, made.err).toBe(0);
    const poet = JSON.parse(made.out) as Record<string, unknown>;
    expect(poet).toMatchObject({
      name: 'poet',
      version: 1,
      model: 'scripted',
      systemPrompt: 'You answer in haiku.\n',
      tools: ['read_run', 'run_command'],
      envelope: { runs: 3, usd: 0.5 },
      maxStepsPerInterval: 4,
      enabled: true,
    });
    const listed = await everdict(['agent', 'list'], env);
    expect(listed.code, listed.err).toBe(0);
    expect(listed.out).toMatch(
      new RegExp(`^${poet.id}\\s+poet\\s+1\\s+scripted\\s+read_run,run_command\\s+yes$`, 'm'),
    );
  });

  it('agent chat: the parked turn lists its call (GET /runs/:id/input), --approve answers it by id, the turn finishes', async () => {
    const created = await everdict(
      ['agent', 'define', 'chat-releaser', '--model', 'scripted', '--tool', 'ask_approval'],
      env,
    );
    expect(created.code, created.err).toBe(0);
    const agentId =
      /^agent (\w+) \(chat-releaser\) version 1 defined; talk to it: everdict agent chat \1$/m.exec(
        created.out,
      )?.[1];
    expect(agentId).toBeDefined();
    const r = await everdict(['agent', 'chat', agentId!, '-m', 'ship 1.4', '--approve'], env);
    expect(r.code, `${r.err}\n${agentLog}`).toBe(0);
    expect(r.err).toMatch(/^conversation \w+$/m);
    expect(r.err).toMatch(/^waiting: call_0_0 approval: May I ship this release\?$/m);
    expect(r.err).toMatch(/^call_0_0 approved$/m);
    expect(r.err).toMatch(/^run_\w+ succeeded$/m);
    // The turn reads as a conversation, each event once across its park and resume: the tool call, its result
    // and the assistant's answer — not the model's accounting, not the user's own message echoed back.
    expect(r.out.split('\n').filter(Boolean)).toEqual([
      '→ ask_approval {"question":"May I ship this release?"}',
      '← ask_approval {"approved":true}',
      'Approval answered: {"approved":true}',
    ]);
    // --json: every event as stored, once, in order (the resumed turn's tail starts after the parked one's). The
    // agent named by its name, the one agent of the tenant that has it; a name none has is refused.
    const j = await everdict(
      ['agent', 'chat', 'chat-releaser', '-m', 'ship 1.5', '--approve', '--json'],
      env,
    );
    expect(j.code, j.err).toBe(0);
    const events = j.out
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { seq: number; type: string });
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    expect(events.filter((e) => e.type === 'tool_result')).toHaveLength(1);
    const nobody = await everdict(['agent', 'chat', 'nobody-by-that-name', '-m', 'hi'], env);
    expect(nobody.code).toBe(3);
    expect(nobody.err).toMatch(/no agent named "nobody-by-that-name" \(everdict agent list names them\)/);
  }, 120_000);

  it('demo: runs every step it can, the agent turn parks, is approved and resumes; every record verifies', async () => {
    const r = await everdict(['demo'], env);
    expect(r.code, `${r.out}\n${r.err}\n${agentLog}`).toBe(0);
    expect(r.out).toMatch(/group grp_\w+: succeeded \{"succeeded":20\}/);
    expect(r.out).toMatch(/re-scoring scoring_\w+ \(rescoreOf scoring_\w+\)/);
    expect(r.out).toMatch(/cancelled 3 run\(s\)/);
    expect(r.out).toMatch(/refused: 402 envelope_exhausted \(rule envelope\)/);
    expect(r.out).toMatch(/turn run_\w+: awaiting_input — parked as its transcript/);
    expect(r.out).toMatch(/waiting: call_0_0 approval: May I ship this release\?/);
    expect(r.out).toMatch(/approved call_0_0 \(POST \/runs\/run_\w+\/input\)/);
    expect(r.out).toMatch(
      /turn run_\w+: succeeded — "Approval answered: \{"approved":true,"note":"approved by the demo"\}"/,
    );
    expect(r.out).toMatch(/record: closed, account non_blocking, idle [1-9]\d* µJ while parked/);
    expect(r.out).not.toMatch(/agent conversation \(no agent service/);
    expect(r.out).toMatch(/^ {3}terminal → exit 0: terminal-42$/m);
    expect(r.out).toMatch(/(\d+) verified, 0 did not/);
    expect(r.out).toMatch(/signed by control-plane [0-9a-f]{16}…/);
    // The agent turn's intervals are signed by the agent host's own key, verified trusting only it.
    expect(r.out).toMatch(/signed by agent-host [0-9a-f]{16}…: [1-9]\d* record\(s\)/);
    expect(r.out).toMatch(/demo: every record verified/);
  }, 600_000);

  // Last of this block: it revokes the agent service's host.
  it("agent hosts lists the service's shared host; only the operator's door revokes it", async () => {
    const listed = await everdict(['agent', 'hosts'], env);
    expect(listed.code, listed.err).toBe(0);
    const host = /^(agh_\w+)\s+\S+\s+active\s+shared\s+\d+/m.exec(listed.out)?.[1];
    expect(host, listed.out).toBeDefined();
    const refused = await everdict(['agent', 'revoke-host', host!], env);
    expect(refused.code).toBe(3);
    expect(refused.err).toMatch(
      new RegExp(
        `403 forbidden: agent host ${host} is shared .*\\(everdict agent revoke-host ${host} --operator\\)`,
      ),
    );
    const operatorEnv = { ...env, EVERDICT_INTERNAL_TOKEN: cp.internalToken };
    const shared = await everdict(['agent', 'hosts', '--operator', '--json'], operatorEnv);
    expect((JSON.parse(shared.out) as { id: string }[]).map((h) => h.id)).toContain(host);
    const revoked = await everdict(['agent', 'revoke-host', host!, '--operator'], operatorEnv);
    expect(revoked.code, revoked.err).toBe(0);
    expect(revoked.out).toMatch(new RegExp(`^agent host ${host} \\(\\S+\\) revoked`, 'm'));
    expect((await everdict(['agent', 'hosts'], env)).out).toMatch(
      new RegExp(`^${host}\\s+\\S+\\s+revoked\\s+shared\\s+0\\s+operator$`, 'm'),
    );
  });
});
