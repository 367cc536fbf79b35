// `<dataDir>/main-job.json` holds the admin key and service token the main job's data already uses: a file
// that is not JSON, or not their shape, is refused as a usage error (exit 2) naming the file, and is never
// overwritten with new keys.
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { registerStart } from '../src/commands/start.js';
import { CliError } from '../src/errors.js';
import { runCli } from '../src/program.js';
import { loadOrCreateSecrets, recordUrl, SECRETS_FILE } from '../src/stack/secrets.js';

/** `everdict start …` in-process, as main.ts registers it: exit code and stderr. */
async function start(args: string[]): Promise<{ code: number; err: string }> {
  let err = '';
  const sink = (into: (s: string) => void) =>
    new Writable({
      write(chunk: Buffer, _enc, cb) {
        into(chunk.toString('utf8'));
        cb();
      },
    });
  const io = {
    stdout: sink(() => undefined),
    stderr: sink((s) => {
      err += s;
    }),
    stdin: new PassThrough(),
    env: { PATH: process.env.PATH ?? '' },
  };
  const code = await runCli(['start', ...args], io, {
    register: (program, _ctx, done) => registerStart(program, io, done),
  });
  return { code, err };
}

let dir = '';
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});
const fresh = () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'everdict-secrets-'));
  return path.join(dir, SECRETS_FILE);
};

describe('main-job.json', () => {
  it('a file that is not JSON: `start` exits 2 (usage) naming the file and what to do; the file is kept', async () => {
    const file = fresh();
    writeFileSync(file, '{"apiKey": "evd_trunc');
    const r = await start(['--port', '0', '--data-dir', dir]);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`usage: ${file} is not JSON`);
    expect(r.err).toMatch(/not replaced\. Restore it/);
    expect(readFileSync(file, 'utf8')).toBe('{"apiKey": "evd_trunc');
  });

  it('JSON of another shape is refused, never overwritten with new keys', () => {
    const file = fresh();
    const text = `${JSON.stringify({ apiKey: 'evd_the-key-the-data-uses-0123', token: 'x' })}\n`;
    writeFileSync(file, text);
    let err: unknown;
    try {
      loadOrCreateSecrets(dir, {});
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CliError);
    expect((err as CliError).exitCode).toBe(2);
    expect((err as CliError).message).toContain(`${file} is not the main job's secrets (internalToken:`);
    expect(readFileSync(file, 'utf8')).toBe(text);
  });

  it('a missing file is created; the file as `start` leaves it (with its url) is read back', () => {
    const file = fresh();
    const first = loadOrCreateSecrets(dir, {});
    expect(first.created).toBe(true);
    recordUrl(dir, 'http://127.0.0.1:8787');
    const again = loadOrCreateSecrets(dir, {});
    expect(again).toEqual({ ...first, created: false });
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ url: 'http://127.0.0.1:8787' });
  });
  it('a kept file readable by others (restored with cp: 0644) is narrowed to 0600 when the main job uses it', () => {
    const file = fresh();
    const secrets = {
      apiKey: 'evd_the-key-the-data-uses-0123',
      internalToken: 'int_the-token-of-the-data-0123',
    };
    writeFileSync(file, `${JSON.stringify(secrets)}\n`);
    chmodSync(file, 0o644);
    expect(loadOrCreateSecrets(dir, {})).toMatchObject({ ...secrets, created: false });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    rmSync(file);
    writeFileSync(file, `${JSON.stringify(secrets)}\n`);
    chmodSync(file, 0o640);
    recordUrl(dir, 'http://127.0.0.1:8787'); // the URL written into it after the start
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });
});
