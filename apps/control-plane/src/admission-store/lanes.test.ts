// The dispatch lane claims by the stored global policy: an aging bound set through the store promotes a
// batch run that has waited past it ahead of a fresher interactive run.
import { configureGlobal } from '@everdict/admission';
import { afterEach, describe, expect, it } from 'vitest';
import { type TestCore, testCore } from '../../test/core.js';
import { PgAdmissionLanes } from './lanes.js';
import { PgAdmissionStore } from './pg-admission-store.js';

const echo = (cls: 'batch' | 'interactive') => ({
  kind: 'analysis',
  subject: { config: { fn: 'echo', message: cls } },
  class: cls,
});

describe('PgAdmissionLanes.claimKinds', () => {
  let t: TestCore;
  afterEach(async () => t.close());

  async function firstClaimed(
    agingMs?: number,
  ): Promise<{ batch: string; interactive: string; first: string }> {
    t = await testCore({ scheduler: { enabled: false } });
    const db = t.core.internals.deps.db;
    if (agingMs !== undefined) await configureGlobal(new PgAdmissionStore(db), { agingMs });
    const batch = (await t.core.services.runs.create(t.admin, echo('batch'))).run.id;
    await new Promise((r) => setTimeout(r, 30));
    const interactive = (await t.core.services.runs.create(t.admin, echo('interactive'))).run.id;
    const [claim] = await new PgAdmissionLanes(db).claimKinds(1, Date.now(), ['analysis']);
    return { batch, interactive, first: claim?.runId ?? 'none' };
  }

  it('serves interactive first while nothing has aged (default bound)', async () => {
    const r = await firstClaimed();
    expect(r.first).toBe(r.interactive);
  });

  it('honours the aging bound stored in the global policy', async () => {
    const r = await firstClaimed(10);
    expect(r.first).toBe(r.batch);
  });
});
