// Starts s3rver in a child process for a test and stops it afterwards. The S3 backend's tests run against
// it: nothing here is mocked, the SDK speaks HTTP to a real S3-compatible server.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface S3rverHandle {
  readonly endpoint: string;
  readonly bucket: string;
  stop(): Promise<void>;
}

const script = fileURLToPath(new URL('./s3rver-server.mjs', import.meta.url));

export async function startS3rver(bucket = 'everdict'): Promise<S3rverHandle> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 's3rver-'));
  const child: ChildProcess = spawn(process.execPath, ['--openssl-legacy-provider', script, dir, bucket], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /PORT (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`s3rver exited with ${code} before listening`)));
    child.once('error', reject);
  });
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.stdin!.end();
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
