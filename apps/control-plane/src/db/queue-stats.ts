// Keeps the planner's picture of the admission queue current. The claim reads a small window of `adm_queue`
// in WFQ order; that is an ordered index scan that stops after the window only if the planner knows the queue
// is large. With statistics taken while it was empty (a fresh database, a burst after a quiet hour) it plans
// a bitmap scan of every queued entry plus a sort — O(queue) per claim (measured: 5.5 ms vs 0.16 ms per claim
// at 2,000 queued). Autovacuum corrects that only after its naptime (1 min by default), so the writers that
// enqueue note how many entries they added, and once that reaches the size the statistics last saw (at least
// MIN_CHANGE) the queue is counted (bounded: at most what would warrant an ANALYZE), and only if it did grow
// that far — at least MIN_CHANGE and twice what the statistics saw — one `ANALYZE adm_queue` runs, in the
// background, never on a request's path, one at a time. A queue that stays short while many runs pass through
// it (steady low load: 500 creates claimed as they come) keeps its statistics: an ANALYZE changes no plan then
// but invalidates the claim, create and settle statements on every pooled connection, each replanned (≈ 4 ms)
// on the request that next uses it.
import { sql } from 'kysely';
import type { Db } from './tx.js';

const MIN_CHANGE = 500;

export class QueueStats {
  private added = 0;
  private known = 0;
  private analyzing: Promise<void> | null = null;
  analyzed = 0;
  /** Counts that found the queue short of an ANALYZE's worth (tests, tooling). */
  skipped = 0;

  constructor(
    private readonly db: Db,
    private readonly onError: (e: unknown) => void = () => undefined,
  ) {}

  /** `n` entries were enqueued; refresh the statistics once the queue may have outgrown them. */
  noteEnqueued(n: number): void {
    this.added += n;
    if (this.analyzing || this.added < Math.max(MIN_CHANGE, this.known)) return;
    this.added = 0;
    this.analyzing = this.analyze()
      .catch(this.onError)
      .finally(() => {
        this.analyzing = null;
      });
  }

  /**
   * A VACUUM of the queue (vacuum-keeper.ts) set its size in `pg_class` as the planner now sees it: `n`
   * entries (negative: never counted). The next ANALYZE is then weighed against that.
   */
  sawSize(n: number): void {
    this.known = Math.max(0, n);
  }

  /** Wait for a refresh in flight (shutdown, tests). */
  async settled(): Promise<void> {
    await this.analyzing;
  }

  private async analyze(): Promise<void> {
    const worth = Math.max(MIN_CHANGE, 2 * this.known);
    const { rows: counted } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM (SELECT 1 FROM adm_queue LIMIT ${worth}::int) q`.execute(this.db);
    if (Number(counted[0]?.n ?? 0) < worth) {
      this.skipped += 1;
      return;
    }
    await sql`ANALYZE adm_queue`.execute(this.db);
    const { rows } = await sql<{ n: number }>`
      SELECT reltuples::float8 AS n FROM pg_class WHERE oid = 'adm_queue'::regclass`.execute(this.db);
    this.known = Math.max(0, Number(rows[0]?.n ?? 0));
    this.analyzed += 1;
  }
}
