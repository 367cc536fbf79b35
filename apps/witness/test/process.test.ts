// The built `everdict-witness` as a real child process against a log over real HTTP
// (@everdict/headlog/testing): restarted from its state file, it refuses a log that was rewritten while it
// was down — exit 3 and an error line — where a witness without that memory would have cosigned it.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bytesToHex, keyPairFromSeed } from '@everdict/headlog';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Fixture, fixture, head } from './helpers.js';

const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
let f: Fixture | undefined;

beforeAll(() => {
  if (!existsSync(cli))
    throw new Error(`${cli} is missing: run \`pnpm --filter @everdict/witness build\` first`);
});
afterEach(async () => {
  await f?.server.close();
  f = undefined;
});

function witness(args: string[]): Promise<{ code: number; lines: Record<string, unknown>[]; err: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cli, ...args], (error, stdout, stderr) => {
      const code = error ? ((error as { code?: number }).code ?? 1) : 0;
      const lines = stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      resolve({ code, lines, err: stderr });
    });
  });
}

describe('everdict-witness (process)', () => {
  it('restarted from its state file, refuses a log rewritten while it was down (exit 3)', async () => {
    f = await fixture(4);
    const state = join(f.dir, 'state.json');
    const args = [
      '--log',
      f.server.url,
      '--key-file',
      f.witnessKeyFile,
      '--state-file',
      state,
      '--metrics-port',
      '0',
      '--metrics-host',
      '127.0.0.1',
      '--once',
    ];
    const first = await witness(args);
    expect(first.code, first.err).toBe(0);
    expect(first.lines.some((l) => l.msg === 'tree head accepted' && l.tree_size === 4)).toBe(true);
    expect(f.log.cosignaturesOf(4)).toHaveLength(1);
    const remembered = readFileSync(state, 'utf8');

    // While the witness is down, the log rewrites run-1's second leaf and grows past it.
    f.log.rewrite(1, { tenantId: 'acme', runId: 'run-1', length: 2, head: head(2, 3), loggedMs: 1 });
    for (let i = 5; i <= 7; i++) f.log.append({ tenantId: 'acme', runId: 'run-1', length: i, head: head(i) });
    f.log.publish();

    const second = await witness(args);
    expect(second.code, second.err).toBe(3);
    const alarm = second.lines.find((l) => l.level === 50);
    expect(alarm).toMatchObject({
      alarm: 'fork',
      code: 'InconsistentLog',
      accepted_size: 4,
      offered_size: 7,
    });
    expect(readFileSync(state, 'utf8')).toBe(remembered);
    expect(f.log.cosignaturesOf(7)).toEqual([]);

    // The memory is what caught it: a witness with no state accepts the rewritten log as its first tree.
    const fresh = await witness([
      ...args.slice(0, 4),
      '--state-file',
      join(f.dir, 'other.json'),
      ...args.slice(6),
    ]);
    expect(fresh.code, fresh.err).toBe(0);
    expect(f.log.cosignaturesOf(7)).toHaveLength(1);
  });

  it('several logs in one process; a state file that does not parse is refused with exit 2', async () => {
    f = await fixture(2);
    const second = await fixture(3);
    try {
      const state = join(f.dir, 'state.json');
      const logKey = Buffer.from(second.log.key.publicKey).toString('hex');
      const r = await witness([
        '--log',
        f.server.url,
        '--log',
        `${second.server.url}=${logKey}`,
        '--key-file',
        f.witnessKeyFile,
        '--state-file',
        state,
        '--metrics-port',
        '0',
        '--metrics-host',
        '127.0.0.1',
        '--once',
      ]);
      expect(r.code, r.err).toBe(0);
      expect(f.log.cosignaturesOf(2)).toHaveLength(1);
      // second's log accepts only its own witness key, so it refuses this witness's cosignature: not delivered
      expect(r.lines.some((l) => l.msg === 'tree head accepted' && l.log === second.server.url)).toBe(true);
      expect(JSON.parse(readFileSync(state, 'utf8')).logs[second.server.url].log_key).toBe(logKey);

      const bad = join(f.dir, 'bad.json');
      writeFileSync(bad, 'not json');
      const refused = await witness([
        '--log',
        f.server.url,
        '--key-file',
        f.witnessKeyFile,
        '--state-file',
        bad,
        '--metrics-port',
        '0',
        '--once',
      ]);
      expect(refused.code).toBe(2);
      expect(refused.lines.find((l) => l.level === 50)).toMatchObject({ code: 'CorruptState' });
      expect(readFileSync(bad, 'utf8')).toBe('not json');
    } finally {
      await second.server.close();
    }
  });

  it('keygen: a new 0600 seed and its public key; an existing file or an unwritable path is exit 2', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'witness-keygen-'));
    const path = join(dir, 'witness.key');
    const made = await witness(['keygen', path]);
    expect(made.code, made.err).toBe(0);
    const seed = readFileSync(path, 'utf8').trim();
    expect(seed).toMatch(/^[0-9a-f]{64}$/);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const pair = keyPairFromSeed(Buffer.from(seed, 'hex'));
    expect(made.lines[0]).toEqual({ public_key: bytesToHex(pair.publicKey) });

    const again = await witness(['keygen', path]);
    expect(again.code).toBe(2);
    expect(again.lines.find((l) => l.level === 50)).toMatchObject({ code: 'BadConfig' });
    expect(readFileSync(path, 'utf8').trim()).toBe(seed); // never replaced

    const nowhere = await witness(['keygen', join(dir, 'missing', 'witness.key')]);
    expect(nowhere.code, nowhere.err).toBe(2);
    expect(nowhere.lines.find((l) => l.level === 50)).toMatchObject({ code: 'BadConfig' });
  });
});
