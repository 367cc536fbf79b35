// Keeps the hot statements' plans current while the run tables grow. `runs` and `adm_slots` gain a row per run
// and lose none. The hot statements are prepared (db/prepared.ts): each pooled connection caches one generic
// plan, built while the tables were as small as they were then (on a fresh database: a few dozen rows, the
// warm-up's), and PostgreSQL replans it only when a table it reads is ANALYZEd or altered. Planned on a tiny
// table, the settle's write joins its runs by a sequential scan of `runs` — measured in the http shape: half of
// the settles after 1,000 runs still scanned the whole table (1.8–2.7 ms a settle, growing with it). Autovacuum
// would ANALYZE after its naptime; where it is off, never. So the create path notes how many runs it added, and
// once that reaches the size the statistics last saw (at least MIN_CHANGE), `pg_class.reltuples` is read: if
// nothing refreshed it meanwhile (it is unknown, or no larger than when last read) one `ANALYZE runs,
// adm_slots` runs in the background, never on a request's path, one at a time. The tables double between two
// of them: a handful over a table's life, each invalidating the hot plans once (replanned on next use).
import { sql } from 'kysely';
import type { Db } from './tx.js';

const MIN_CHANGE = 500;

export class RunStats {
  private added = 0;
  /** reltuples of `runs` when last read (-1: never analyzed or not read yet). */
  private known = -1;
  private analyzing: Promise<void> | null = null;
  analyzed = 0;

  constructor(
    private readonly db: Db,
    private readonly onError: (e: unknown) => void = () => undefined,
  ) {}

  /** `n` runs were created; refresh the statistics once the tables may have doubled since they were taken. */
  noteCreated(n: number): void {
    this.added += n;
    if (this.analyzing || this.added < Math.max(MIN_CHANGE, this.known)) return;
    this.analyzing = this.refresh()
      .catch(this.onError)
      .finally(() => {
        this.analyzing = null;
      });
  }

  /** Wait for a refresh in flight (shutdown, tests). */
  async settled(): Promise<void> {
    await this.analyzing;
  }

  private async reltuples(): Promise<number> {
    const { rows } = await sql<{ n: number }>`
      SELECT reltuples::float8 AS n FROM pg_class WHERE oid = 'runs'::regclass`.execute(this.db);
    return Number(rows[0]?.n ?? -1);
  }

  private async refresh(): Promise<void> {
    const seen = await this.reltuples();
    this.added = 0;
    // Refreshed by someone else (autovacuum, another replica) since we last looked: its statistics stand.
    if (seen >= 0 && seen > this.known) {
      this.known = seen;
      return;
    }
    await sql`ANALYZE runs, adm_slots`.execute(this.db);
    this.known = Math.max(0, await this.reltuples());
    this.analyzed += 1;
  }
}
