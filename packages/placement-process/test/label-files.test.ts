// A label file that is not JSON (empty or cut short: a crash of the host between its rename and its data
// reaching the disk) is skipped as an unparsable one is, never thrown: `reap` still removes the others, and a
// handle naming it is `gone`. Before, JSON.parse's SyntaxError came out of reap, provision and every call.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isPlacementError } from '@everdict/placement';
import { beforeAll, describe, expect, it } from 'vitest';
import { layout, listRecords } from '../src/sandbox-state.js';
import { makeDriver, requireBwrap } from './helpers.js';

beforeAll(() => {
  requireBwrap();
});

describe('a label file that is not JSON', () => {
  it('is skipped by listRecords and reap, and a handle for it is gone', async () => {
    const driver = makeDriver();
    const kept = await driver.provision({ labels: { tenant: 'lf', runId: 'kept', kind: 'sandbox' } });
    const broken = { ...kept, id: 'pd-000000000000000000000000' };
    const l = layout(driver.config.stateDir);
    writeFileSync(join(l.sandboxes, `${broken.id}.json`), '{"version":1,"handle":{'); // cut short
    writeFileSync(join(l.sandboxes, 'pd-111111111111111111111111.json'), ''); // empty
    expect((await listRecords(l)).map((r) => r.handle.id)).toEqual([kept.id]);
    expect(await driver.reap({ labels: { tenant: 'lf' } })).toEqual([]);
    const refused = await driver.exec(broken, ['true']).catch((e: unknown) => e);
    expect(isPlacementError(refused, 'gone')).toBe(true);
    await driver.dispose(broken); // nothing to remove: no error either
    expect((await driver.exec(kept, ['true'])).exitCode).toBe(0);
    await driver.dispose(kept);
  }, 60_000);
});
