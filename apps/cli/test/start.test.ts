// The main job as a user starts it: `everdict start` (what `pnpm start` runs) spawned from the built CLI,
// waited on until healthy, then SIGINT — every process it started must be gone and it must exit 0.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { everdict } from './capture.js';

const require = createRequire(import.meta.url);

const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'everdict-main-job-'));
const started: number[] = [];
afterAll(async () => {
  // Only if the test failed half-way: stop the main job as Ctrl-C stops it (its parts with it), then whatever is
  // left of its process group by force. A SIGKILL of the main job alone left its control plane, embedded runner
  // and agent running on, orphaned, for the rest of the run.
  for (const pid of started) {
    if (!alive(pid)) continue;
    process.kill(pid, 'SIGINT');
    for (let i = 0; i < 300 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
    try {
      process.kill(-pid, 'SIGKILL'); // the main job runs detached: its own process group, its parts in it
    } catch {
      /* the group is gone */
    }
  }
  rmSync(dataDir, { recursive: true, force: true });
});

/** The pids whose parent is `pid` (Linux /proc). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirProc()) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}
function readdirProc(): string[] {
  return require('node:fs')
    .readdirSync('/proc')
    .filter((d: string) => /^\d+$/.test(d));
}
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
  } catch {
    return false;
  }
};

describe('everdict start (the main job)', () => {
  it('starts every part, answers health and the console with the printed key, and Ctrl-C stops them all', async () => {
    const child = spawn(process.execPath, [MAIN, 'start', '--port', '0', '--data-dir', dataDir], {
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group: afterAll can stop every part of it (above)
    });
    if (child.pid) started.push(child.pid);
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      out += c.toString();
    });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setInterval(() => {
        const m = /^READY (\S+)$/m.exec(out);
        if (m?.[1]) {
          clearInterval(timer);
          resolve(m[1]);
        }
        if (child.exitCode !== null) {
          clearInterval(timer);
          reject(new Error(`exited early:\n${out}`));
        }
      }, 50);
    });
    const key = /^\s+API key\s+(\S+)/m.exec(out)?.[1] ?? '';
    expect(key).toMatch(/^evk_[A-Za-z0-9_-]{43}$/);
    expect(out).toMatch(/console\s+http:\/\/localhost:\d+\/console/);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect((await fetch(`${url}/console`)).status).toBe(200);
    const runs = await fetch(`${url}/runs`, { headers: { authorization: `Bearer ${key}` } });
    expect(runs.status).toBe(200);
    // A command run on the embedded runner: --wait prints the tails it settled with (stdout to stdout, stderr
    // to stderr) and why it failed; a tail cut at 64 KiB says so.
    const env = { EVERDICT_URL: url, EVERDICT_API_KEY: key };
    const failed = await everdict(
      ['run', 'command', '--wait', '--', 'sh', '-c', 'echo out; echo err >&2; exit 3'],
      env,
    );
    expect(failed.code, failed.err).toBe(1);
    expect(failed.out).toMatch(/^run_\w+ queued \(interactive\)\nout\n$/);
    expect(failed.err).toMatch(
      /^err\nrun_\w+ failed\nrun_failed: run_\w+ ended failed: exit_code: exited with 3\n$/,
    );
    // Followed as it runs: the output as `logs` prints it (each stream's text to its own), then how it ended.
    const followed = await everdict(
      ['run', 'command', '--follow', '--', 'sh', '-c', 'echo out; echo err >&2; exit 3'],
      env,
    );
    expect(followed).toMatchObject({ code: 1, out: 'out\n' });
    expect(followed.err).toMatch(
      /^run_\w+ queued \(interactive\)\nerr\nrun_\w+ failed\nrun_failed: run_\w+ ended failed: exit_code: exited with 3\n$/,
    );
    // Its trajectory: the output as text (each stream to its own), as stored (--json), and tailed (--follow).
    const failedId = /^(run_\w+) queued/.exec(failed.out)?.[1] ?? '';
    for (const args of [[], ['--follow']])
      expect(await everdict(['logs', failedId, ...args], env)).toEqual({
        code: 0,
        out: 'out\n',
        err: 'err\n',
      });
    const shown = await everdict(['show', failedId], env);
    expect(shown.code, shown.err).toBe(0);
    expect(shown.out).toMatch(new RegExp(`^${failedId}  command  failed\n`));
    expect(shown.out).toMatch(/^ {2}error +exit_code: exited with 3$/m);
    expect(shown.out).toMatch(/^ {2}exit code +3$/m);
    expect(shown.out).toMatch(/^ {2}trajectory +2 events, sealed/m);
    expect(shown.out.endsWith('\nout\n')).toBe(true); // its output tails, as --wait prints them
    expect(shown.err).toBe('err\n');
    const stored = await everdict(['logs', failedId, '--json'], env);
    const events = stored.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(events).toHaveLength(2);
    expect(events).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'log', stream: 'stdout', message: 'out', runId: failedId }),
        expect.objectContaining({ type: 'log', stream: 'stderr', message: 'err', runId: failedId }),
      ]),
    );
    const long = await everdict(
      ['run', 'command', '--wait', '--', 'sh', '-c', 'head -c 70000 /dev/zero | tr "\\0" a'],
      env,
    );
    expect(long.code, long.err).toBe(0);
    expect(long.out.split('\n')[1]).toBe('a'.repeat(64 * 1024));
    expect(long.err).toMatch(/output truncated to the last 64 KiB of each stream/);
    // Every file a command left under out/, fetched into a directory at once (--dir: the run's archive), each
    // verified; twelve small ones (uploaded several at a time by the runner) and one in a subdirectory.
    const files = Array.from({ length: 12 }, (_, i) => `f${i}.txt`);
    const wrote = await everdict(
      [
        'run',
        'command',
        '--wait',
        '--',
        'sh',
        '-c',
        `mkdir -p out/sub && printf nested > out/sub/n.txt && for f in ${files.join(' ')}; do printf "$f" > out/$f; done`,
      ],
      env,
    );
    expect(wrote.code, wrote.err).toBe(0);
    const wroteId = /^(run_\w+) queued/.exec(wrote.out)?.[1] ?? '';
    const into = path.join(dataDir, 'fetched');
    const fetched = await everdict(['artifact', wroteId, '--dir', into], env);
    expect(fetched.code, fetched.err).toBe(0);
    expect(fetched.err).toMatch(new RegExp(`^13 artifacts of ${wroteId} in .*fetched, each verified$`, 'm'));
    // `show` names the first ten, then sums up the rest in one line that says how to get them.
    const shownOut = (await everdict(['show', wroteId], env)).out;
    expect(
      shownOut.match(/^ {2}artifact +\S+ \(\d+ bytes; everdict artifact run_\w+ \S+\)$/gm),
      shownOut,
    ).toHaveLength(10);
    expect(shownOut).toMatch(
      new RegExp(
        `^ {2}artifact +… and 3 more \\(\\d+ bytes; everdict artifact ${wroteId} lists them all, --dir DIR fetches them\\)$`,
        'm',
      ),
    );
    expect(readFileSync(path.join(into, 'sub', 'n.txt'), 'utf8')).toBe('nested');
    for (const f of files) expect(readFileSync(path.join(into, f), 'utf8')).toBe(f);
    expect(readdirSync(into).sort()).toEqual([...files, 'sub'].sort()); // no partial file left beside them
    // An eval experiment over a dataset on the embedded runner: a harness defined here reads case.json
    // (`{runId, caseId, caseSpec}`) and answers it in out/outputs.json; one run per case, each graded against
    // its own case's answer key (`equalsPath`: `subject.expected`, which the harness is never given — its
    // summary names the keys of the case it saw), the third case's expectation wrong on purpose.
    const harness = [
      'const { caseSpec } = JSON.parse(require("fs").readFileSync("case.json", "utf8"));',
      'require("fs").mkdirSync("out", { recursive: true });',
      'const result = { sum: caseSpec.a + caseSpec.b };',
      'const summary = "sum " + result.sum + " from " + Object.keys(caseSpec).join(",");',
      'require("fs").writeFileSync("out/outputs.json", JSON.stringify({ summary, result }));',
      // Its conversation and model calls, as a harness traces them: the run's usage is the calls' fold (the
      // runner reports it), and `logs` reads the trace as a conversation.
      'const call = { type: "llm_call", model: "m", inputTokens: 100 * caseSpec.a, outputTokens: 7, costUsd: 0.01 };',
      'const ask = { type: "message", role: "user", content: "add " + caseSpec.a + " and " + caseSpec.b };',
      'const tool = { type: "tool_call", tool: "add", callId: "t1", input: [caseSpec.a, caseSpec.b] };',
      'const got = { type: "tool_result", callId: "t1", output: result.sum };',
      'const say = { type: "message", role: "assistant", content: "it is " + result.sum };',
      'const trace = [ask, call, tool, got, say].map((e) => JSON.stringify(e) + "\\n").join("");',
      'require("fs").writeFileSync("out/trace.jsonl", trace);',
    ].join(' ');
    expect((await everdict(['harness', 'define', 'adder@1', '--', 'node', '-e', harness], env)).code).toBe(0);
    const cases = path.join(dataDir, 'cases.jsonl');
    writeFileSync(
      cases,
      [
        '{"id":"a","a":2,"b":2,"expected":{"sum":4}}',
        '{"id":"b","a":2,"b":3,"expected":{"sum":5}}',
        '{"id":"c","a":1,"b":1,"expected":{"sum":3}}',
      ].join('\n'),
    );
    const grader =
      '{"name":"sum","type":"json_field_equals","path":"outputs.result","equalsPath":"subject.expected"}';
    const evals = await everdict(
      ['experiment', 'eval', '--harness', 'adder@1', '--cases', cases, '--grader', grader, '--json'],
      env,
    );
    expect(evals.code, evals.err).toBe(0);
    const { group, scoring, scores } = JSON.parse(evals.out) as {
      group: { id: string; rollup: { byStatus: Record<string, number>; usage: Record<string, number> } };
      scoring: { aggregate: { graders: { grader: string; passRate: number }[] } };
      scores: { runId: string; passed?: boolean; detail: string }[];
    };
    expect(group.rollup.byStatus).toEqual({ succeeded: 3 });
    // What the experiment's runs used: the sum of their traced model calls (100 × a tokens in, 7 out, a cent each).
    expect(group.rollup.usage).toMatchObject({ inputTokens: 500, outputTokens: 21, llmCalls: 3 });
    expect(group.rollup.usage.costUsd).toBeCloseTo(0.03);
    expect(group.rollup.usage.cpuTimeMs).toBeGreaterThan(0);
    // …and in the groups table: 500 + 21 tokens, three cents.
    const groups = await everdict(['groups', '--kind', 'experiment'], env);
    expect(groups.out).toMatch(new RegExp(`^${group.id} .* 521 tokens · \\$0\\.0300 +\\d+[smh]$`, 'm'));
    expect(scoring.aggregate.graders.find((a) => a.grader === 'sum')?.passRate).toBeCloseTo(2 / 3);
    const wrong = scores.filter((v) => v.passed === false);
    expect(wrong.map((v) => v.detail)).toEqual(['outputs.result differs from subject.expected {"sum":3}']);
    // Each harness saw its case (keys in canonical order) without the answer key; the subject carries it.
    const groupRuns = await everdict(['runs', '--group', group.id, '--json'], env);
    expect(groupRuns.code, groupRuns.err).toBe(0);
    const evalRuns = JSON.parse(groupRuns.out) as {
      id: string;
      subject: { caseId: string; expected?: unknown };
      outputs: { summary?: string };
    }[];
    expect(evalRuns.map((r) => r.outputs.summary).sort()).toEqual([
      'sum 2 from a,b,id',
      'sum 4 from a,b,id',
      'sum 5 from a,b,id',
    ]);
    expect(evalRuns.find((r) => r.subject.caseId === 'c')?.subject.expected).toEqual({ sum: 3 });
    // What the harness left under out/ is the run's to fetch: listed, printed, written only once verified.
    const runC = evalRuns.find((r) => r.subject.caseId === 'c')!.id;
    const listedArtifacts = await everdict(['artifact', runC], env);
    expect(listedArtifacts.code, listedArtifacts.err).toBe(0);
    expect(listedArtifacts.out).toMatch(/^outputs\.json\s+50\s+blake3:[0-9a-f]{64}$/m);
    const showC = await everdict(['show', runC], env);
    expect(showC.out).toMatch(
      new RegExp(
        `^  artifact +outputs\\.json \\(50 bytes; everdict artifact ${runC} outputs\\.json\\)$`,
        'm',
      ),
    );
    expect(showC.out).toMatch(/^ {2}usage +1 llm call · 100 in \/ 7 out tokens · \$0\.0100 · cpu \d+ ms$/m);
    const logsC = await everdict(['logs', runC], env);
    expect(logsC.code, logsC.err).toBe(0);
    expect(logsC.out.trim().split('\n')).toEqual([
      'user: add 1 and 1',
      '· llm m · 100 in / 7 out tokens · $0.0100',
      '→ add [1,1]',
      '← add 2',
      'assistant: it is 2',
    ]);
    const printed = await everdict(['artifact', runC, 'outputs.json'], env);
    expect(printed.code, printed.err).toBe(0);
    expect(JSON.parse(printed.out)).toEqual({ summary: 'sum 2 from a,b,id', result: { sum: 2 } });
    const saved = path.join(dataDir, 'c-outputs.json');
    const written = await everdict(['artifact', runC, 'outputs.json', '-o', saved], env);
    expect(written.code, written.err).toBe(0);
    expect(written.err).toMatch(/c-outputs\.json: 50 bytes, blake3:[0-9a-f]{64} \(verified\)/);
    expect(readFileSync(saved, 'utf8')).toBe(printed.out);
    const unlisted = await everdict(['artifact', runC, 'case.json'], env);
    expect(unlisted.code).toBe(3);
    // Bytes altered in the store (the main job's local trajectories directory): no file, exit 1.
    const address = /blake3:([0-9a-f]{64})/.exec(listedArtifacts.out)![1]!;
    const object = findFile(path.join(dataDir, 'trajectories'), address);
    expect(object).toBeDefined();
    writeFileSync(object!, readFileSync(object!, 'utf8').replace('sum 2', 'sum 3'));
    const altered = path.join(dataDir, 'altered.json');
    const refused = await everdict(['artifact', runC, 'outputs.json', '-o', altered], env);
    expect(refused.code, refused.err).toBe(1);
    expect(refused.err).toMatch(/^not_verified: outputs\.json: /m);
    expect(existsSync(altered)).toBe(false);
    expect(readdirSync(dataDir).filter((f) => f.includes('altered'))).toEqual([]);
    // … nor through the run's archive (`--dir`): the control plane ends it short, the CLI keeps nothing of it.
    const alteredDir = path.join(dataDir, 'altered-dir');
    const cut = await everdict(['artifact', runC, '--dir', alteredDir], env);
    expect(cut.code, cut.err).toBe(1);
    expect(cut.err).toMatch(/^not_verified: /m);
    expect(readdirSync(alteredDir)).toEqual([]);
    // Scored again as a person reads it: the failed verdict names its case.
    const table = await everdict(['score', group.id, '--grader', grader], env);
    expect(table.code, table.err).toBe(0);
    expect(table.out).toContain(
      `${wrong[0]!.runId}  c     sum     outputs.result differs from subject.expected {"sum":3}`,
    );
    // A second harness version over the same cases (it multiplies): the same pass rate, but case b regressed
    // and case c was fixed — what `compare` shows, and what `--strict` refuses (exit 1).
    const product = harness.replace('caseSpec.a + caseSpec.b', 'caseSpec.a * caseSpec.b');
    expect(product).not.toBe(harness);
    expect((await everdict(['harness', 'define', 'adder@2', '--', 'node', '-e', product], env)).code).toBe(0);
    writeFileSync(
      cases,
      [
        '{"id":"a","a":2,"b":2,"expected":{"sum":4}}',
        '{"id":"b","a":2,"b":3,"expected":{"sum":5}}',
        '{"id":"c","a":1,"b":3,"expected":{"sum":3}}',
      ].join('\n'),
    );
    const runOf = async (version: string) => {
      const r = await everdict(
        [
          'experiment',
          'eval',
          '--harness',
          `adder@${version}`,
          '--cases',
          cases,
          '--grader',
          grader,
          '--json',
        ],
        env,
      );
      expect(r.code, r.err).toBe(0);
      return (JSON.parse(r.out) as { group: { id: string } }).group.id;
    };
    const [v1, v2] = [await runOf('1'), await runOf('2')];
    // As a person reads an experiment's end: its usage summed under the group's line.
    const one = path.join(dataDir, 'one.jsonl');
    writeFileSync(one, '{"id":"solo","a":3,"b":1,"expected":{"sum":4}}');
    const solo = await everdict(['experiment', 'eval', '--harness', 'adder@1', '--cases', one], env);
    expect(solo.code, solo.err).toBe(0);
    expect(solo.out).toMatch(
      /^group grp_\w+ succeeded \(\{"succeeded":1\}\)\nusage 1 llm call · 300 in \/ 7 out tokens · \$0\.0100 · cpu \d+ ms$/m,
    );
    const compared = await everdict(['compare', v1, v2, '--strict'], env);
    expect(compared.code, compared.err).toBe(1);
    expect(compared.out).toMatch(/^sum\s+66\.7%\s+66\.7%\s+\+0$/m);
    expect(compared.out).toMatch(
      /^3 cases in both: 1 regressed \(passed → failed\), 1 fixed \(failed → passed\)$/m,
    );
    expect(compared.out).toMatch(
      /^case\s+grader\s+base\s+group\nb\s+sum\s+passed\s+failed\nc\s+sum\s+failed\s+passed$/m,
    );
    expect(compared.err).toMatch(/run_failed: 1 case verdict\(s\) regressed/);
    expect((await everdict(['compare', v1, v1, '--strict'], env)).code).toBe(0);
    // The embedded runner is shared (the operator's): drained from here with the main job's own service token,
    // read from its data directory for its own URL.
    const listedRunners = await everdict(['runner', 'list'], env);
    const embedded = /^(rnr_\w+)\s+embedded\s+active\s+shared\s/m.exec(listedRunners.out)?.[1];
    expect(embedded, listedRunners.out).toBeDefined();
    const drained = await everdict(['runner', 'drain', embedded!, '--operator'], {
      ...env,
      EVERDICT_DATA_DIR: dataDir,
    });
    expect(drained.out, drained.err).toMatch(/^runner rnr_\w+ \(embedded\) draining$/m);
    // The key and the internal token are kept for the next start (mode 0600).
    expect(JSON.parse(readFileSync(path.join(dataDir, 'main-job.json'), 'utf8')).apiKey).toBe(key);

    const kids = childrenOf(child.pid ?? -1);
    started.push(...kids);
    expect(kids.length).toBeGreaterThanOrEqual(1); // the control plane (and the agent service when it has a serve mode)
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    for (const pid of kids) expect(alive(pid)).toBe(false);
    expect(out).toMatch(/stopped/);
  }, 600_000); // PGlite's first start alone takes minutes on a loaded 2-core machine
});

/** The file named `name` somewhere under `dir`. */
function findFile(dir: string, name: string): string | undefined {
  for (const f of readdirSync(dir, { recursive: true, encoding: 'utf8' }))
    if (path.basename(f) === name) return path.join(dir, f);
  return undefined;
}
