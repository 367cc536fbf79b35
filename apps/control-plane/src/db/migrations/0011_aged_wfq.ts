// One finish-tag computation and one aged order (admission's wfq.ts): tags are `start + count / weight`
// (`finishTag`), so a statement computing k tags gets the same floats as k steps of the kernel.
//   adm_wfq: per (tenant, lane) the last tag as (start_v, n) instead of one summed float;
//   adm_tenants: the tenant's aged service (aged_start, aged_n: tags finishTag(aged_start, aged_n + j,
//     weight)) and aged_at (epoch ms of its last promotion or aged service; NULL once blocked);
//   adm_vtime lane 3: the aged clock (AGED_LANE);
//   adm_queue (tenant, enqueued_at, seq): each aged tenant's oldest entries, one index probe each.
import { type Kysely, sql } from 'kysely';

const statements = [
  `ALTER TABLE adm_wfq ADD COLUMN start_v double precision NOT NULL DEFAULT 0,
     ADD COLUMN n bigint NOT NULL DEFAULT 0`,
  `UPDATE adm_wfq SET start_v = last_finish, n = 0`,
  `ALTER TABLE adm_wfq DROP COLUMN last_finish`,
  `ALTER TABLE adm_tenants ADD COLUMN aged_start double precision NOT NULL DEFAULT 0,
     ADD COLUMN aged_n bigint NOT NULL DEFAULT 0, ADD COLUMN aged_at bigint`,
  `INSERT INTO adm_vtime (lane, v) VALUES (3, 0) ON CONFLICT (lane) DO NOTHING`,
  `CREATE INDEX adm_queue_tenant_age ON adm_queue (tenant, enqueued_at, seq)`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const s of statements) await sql.raw(s).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const s of [
    'DROP INDEX IF EXISTS adm_queue_tenant_age',
    'DELETE FROM adm_vtime WHERE lane = 3',
    'ALTER TABLE adm_tenants DROP COLUMN aged_start, DROP COLUMN aged_n, DROP COLUMN aged_at',
    'ALTER TABLE adm_wfq ADD COLUMN last_finish double precision NOT NULL DEFAULT 0',
    'UPDATE adm_wfq w SET last_finish = w.start_v + w.n / t.weight FROM adm_tenants t WHERE t.tenant = w.tenant',
    'ALTER TABLE adm_wfq DROP COLUMN start_v, DROP COLUMN n',
  ])
    await sql.raw(s).execute(db);
}
