// A throwaway PostgreSQL cluster the test owns (initdb + pg_ctl, as .ci/postgres.sh makes one): it can be
// stopped, started and restarted under load. initdb refuses root: as root, the cluster runs as `postgres`
// (runuser). Missing binaries FAIL the test with the reason — it never skips.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';

function pgBin(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(path.join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) {
    throw new Error(`no PostgreSQL server binaries under ${root} (apt-get install postgresql; .ci/run does)`);
  }
  return path.join(root, versions[0]!, 'bin');
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

export class PgCluster {
  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly bin: string,
  ) {}

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  static async create(): Promise<PgCluster> {
    const bin = pgBin();
    const dir = mkdtempSync(path.join(tmpdir(), 'everdict-outage-'));
    chmodSync(dir, 0o777);
    const c = new PgCluster(dir, await freePort(), bin);
    c.run('initdb', ['-D', c.data, '-A', 'trust', '-U', 'postgres']);
    c.ctl('start');
    return c;
  }

  private get data(): string {
    return path.join(this.dir, 'data');
  }

  private run(tool: string, args: string[]): string {
    const exe = path.join(this.bin, tool);
    const asRoot = process.getuid?.() === 0;
    const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', exe, ...args]] : [exe, args];
    return execFileSync(cmd, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
  }

  private ctl(action: 'start' | 'stop' | 'restart', mode: 'fast' | 'immediate' = 'fast'): void {
    const opts = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c max_connections=100 -c fsync=off`;
    const args = ['-D', this.data, '-l', path.join(this.dir, 'log'), '-w', '-t', '60'];
    if (action !== 'stop') args.push('-o', opts);
    if (action !== 'start') args.push('-m', mode);
    this.run('pg_ctl', [...args, action]);
  }

  start(): void {
    this.ctl('start');
  }

  stop(): void {
    this.ctl('stop');
  }

  restart(): void {
    this.ctl('restart');
  }

  /** pg_terminate_backend on every other client backend; returns how many. */
  async terminateBackends(): Promise<number> {
    const c = new pg.Client({ connectionString: this.url });
    c.on('error', () => undefined);
    await c.connect();
    try {
      const r = await c.query<{ n: string }>(
        `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS n FROM pg_stat_activity
         WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'`,
      );
      return Number(r.rows[0]?.n ?? 0);
    } finally {
      await c.end();
    }
  }

  async query<T extends pg.QueryResultRow>(text: string): Promise<T[]> {
    const c = new pg.Client({ connectionString: this.url });
    c.on('error', () => undefined);
    await c.connect();
    try {
      return (await c.query<T>(text)).rows;
    } finally {
      await c.end();
    }
  }

  destroy(): void {
    try {
      this.ctl('stop', 'immediate');
    } catch {
      /* already stopped */
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
