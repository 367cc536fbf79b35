// A process that is the only control-plane listener on its database delivers its after-commit announcements
// in memory — no NOTIFY statement — and NOTIFYs again once another listener appears (src/db/
// listener-presence.ts). Live PostgreSQL only: PGlite has one process and no presence.
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { type LedgerDatabase, openDatabase } from '../src/db/database.js';
import { fallbackPoll } from '../src/db/fallback-poll.js';
import { EVENTS_CHANNEL, notifyAfterCommit } from '../src/ledger/events.js';
import { DISPATCH_CHANNEL, mayWakeRunners } from '../src/services/context.js';
import { eventually, type TestCore, testCore } from './core.js';
import { announceSkippedLiveSuite, createLiveDatabase, LIVE_PG } from './db.js';

announceSkippedLiveSuite('test/listener-presence.pg.test.ts');

const PROBE = 'everdict_probe';

/** A plain LISTEN connection (not a control plane's): it hears only what was really NOTIFYed. */
async function outsider(url: string, ...channels: string[]) {
  const c = new pg.Client({ connectionString: url, application_name: 'outsider' });
  await c.connect();
  const heard: string[] = [];
  c.on('notification', (n) => heard.push(`${n.channel}:${n.payload ?? ''}`));
  for (const channel of channels) await c.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
  return { heard, close: () => c.end() };
}

/** Until the process's presence says it is alone (`true`) or not. */
const aloneBecomes = (ldb: LedgerDatabase, alone: boolean) =>
  eventually(async () => (ldb.alone?.() === alone ? true : undefined));

describe.runIf(LIVE_PG)('listener presence', () => {
  const cleanup: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f().catch(() => undefined);
  });

  it('alone: in memory, no NOTIFY; with a second control plane listening: NOTIFY; alone again once it left', async () => {
    const live = await createLiveDatabase();
    cleanup.push(live.drop);
    const a = await openDatabase({ databaseUrl: live.url, poolSize: 2 });
    cleanup.push(() => a.close());
    const own: string[] = [];
    await a.listen(PROBE, (p) => own.push(p));
    const out = await outsider(live.url, PROBE);
    cleanup.push(out.close);
    await aloneBecomes(a, true); // the outsider is not a control plane: it does not count
    expect(fallbackPoll(a, 100, 1_000).periodMs()).toBe(1_000);

    await notifyAfterCommit(a.db, [[PROBE, 'one']], undefined, a);
    await eventually(async () => (own.includes('one') ? true : undefined));

    const b = await openDatabase({ databaseUrl: live.url, poolSize: 2 });
    cleanup.push(() => b.close());
    const theirs: string[] = [];
    await b.listen(PROBE, (p) => theirs.push(p));
    await aloneBecomes(a, false);
    // Not alone: the fallback looks of its loops come every pollMs again (src/db/fallback-poll.ts).
    expect(fallbackPoll(a, 100, 1_000).periodMs()).toBe(100);
    await notifyAfterCommit(a.db, [[PROBE, 'two']], undefined, a);
    await eventually(async () => (theirs.includes('two') && own.includes('two') ? true : undefined));

    await b.close();
    await aloneBecomes(a, true);
    expect(fallbackPoll(a, 100, 1_000).periodMs()).toBe(1_000);
    await notifyAfterCommit(a.db, [[PROBE, 'three']], undefined, a);
    await eventually(async () => (own.includes('three') ? true : undefined));
    // A real NOTIFY reaches the outsider: 'two' did and arrives before anything sent after it; 'one' and
    // 'three' never went out.
    await eventually(async () => (out.heard.includes(`${PROBE}:two`) ? true : undefined));
    await notifyAfterCommit(a.db, [[PROBE, 'marker']]); // without `ldb`: always a NOTIFY
    await eventually(async () =>
      out.heard.includes(`${PROBE}:marker`) && own.includes('marker') ? true : undefined,
    );
    expect(out.heard).toEqual([`${PROBE}:two`, `${PROBE}:marker`]);
    expect(own).toEqual(['one', 'two', 'three', 'marker']);
  });

  it("a lone control plane's create, claim and settle announce in memory: its own listeners hear them, no one else", async () => {
    const t: TestCore = await testCore();
    cleanup.push(() => t.close());
    const url = t.database.url!;
    const out = await outsider(url, DISPATCH_CHANNEL, EVENTS_CHANNEL);
    cleanup.push(out.close);
    const own: string[] = [];
    const facts: string[] = [];
    const ldb = t.core.internals.ldb;
    cleanup.push(await ldb.listen(DISPATCH_CHANNEL, (p) => own.push(p)));
    cleanup.push(await ldb.listen(EVENTS_CHANNEL, (p) => facts.push(p)));
    await aloneBecomes(t.core.internals.ldb, true);
    const { run } = await t.core.services.runs.create(t.admin, {
      kind: 'analysis',
      subject: { config: { fn: 'echo', message: 'alone' } },
    });
    await eventually(async () => {
      const r = await t.core.services.runs.get(t.admin, run.id);
      return r.status === 'succeeded' ? true : undefined;
    });
    // The create's dispatch announcement (its payload names the inline kind) and the facts of the create, the
    // claim (`run.started`) and the settle reached this process only.
    await eventually(async () => (own.some((p) => !mayWakeRunners(p)) ? true : undefined));
    await eventually(async () => (facts.length >= 3 ? true : undefined));
    await ldb.notify(DISPATCH_CHANNEL, 'marker'); // a real NOTIFY, after all of them
    await eventually(async () => (out.heard.includes(`${DISPATCH_CHANNEL}:marker`) ? true : undefined));
    expect(out.heard).toEqual([`${DISPATCH_CHANNEL}:marker`]);
  });
});
