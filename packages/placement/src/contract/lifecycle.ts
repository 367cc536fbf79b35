// Contract: describe, provision (idempotent, labelled, content-addressed environment), capacity, dispose, reap.
import { expect, it } from 'vitest';
import { environmentOf } from '../address.js';
import { isPlacementError } from '../errors.js';
import { Capacity, DriverDescription, ReapedSandbox } from '../observe.js';
import { MAX_WALL_TIMEOUT_MS, SandboxHandle } from '../spec.js';
import { refusal, type SuiteHarness } from './harness.js';

export function lifecycleTests(h: () => SuiteHarness): void {
  it('describes itself: name, placement, capabilities, mechanism', async () => {
    const d = await h().driver();
    const desc = DriverDescription.parse(d.describe());
    expect((await d.capacity()).mechanism).toBe(desc.mechanism);
  });

  it('provisions a labelled handle whose environment address is BLAKE3 of the canonical manifest', async () => {
    const d = await h().driver();
    const before = Date.now();
    const handle = SandboxHandle.parse(await h().provision(d, { limits: { wallTimeoutMs: 600_000 } }));
    expect(handle.driver).toBe(d.describe().driver);
    expect(handle.labels.tenant).toBe(h().tenant);
    expect(handle.labels.kind).toBe('command');
    expect(handle.environment.image).toBe('default');
    const env = handle.environment;
    expect(env.address).toBe(environmentOf(env.driver, env.image, env.imageDigest).address);
    expect(handle.deadlineMs - handle.createdAtMs).toBe(600_000);
    expect(handle.createdAtMs).toBeGreaterThanOrEqual(before - 1000);
    expect(handle.network).toBe('none');
  });

  it('is idempotent per (tenant, run id): the same run gets the same sandbox back', async () => {
    const d = await h().driver(4);
    const runId = h().runId();
    const first = await h().provision(d, {}, runId);
    const again = await h().provision(d, { env: { IGNORED: '1' } }, runId);
    expect(again).toEqual(first);
    const other = await h().provision(d);
    expect(other.id).not.toBe(first.id);
    expect((await d.capacity()).slotsFree).toBe(2);
  });

  it('refuses an image it does not have with image_not_found', async () => {
    const missing = h().fixture.missingImage;
    if (missing === null) return;
    const d = await h().driver();
    const freeBefore = (await d.capacity()).slotsFree;
    await refusal(h().provision(d, { image: missing }), 'image_not_found');
    expect((await d.capacity()).slotsFree).toBe(freeBefore);
  });

  it('honours a network grant, or refuses it as unsupported', async () => {
    const d = await h().driver();
    if (!d.describe().capabilities.network) {
      await refusal(h().provision(d, { network: 'granted' }), 'unsupported');
      return;
    }
    expect((await h().provision(d, { network: 'granted' })).network).toBe('granted');
  });

  it('counts slots: capacity refuses past the total and frees a slot on dispose', async () => {
    const d = await h().driver(2);
    expect(Capacity.parse(await d.capacity())).toMatchObject({ slotsTotal: 2, slotsFree: 2 });
    const a = await h().provision(d);
    await h().provision(d);
    expect((await d.capacity()).slotsFree).toBe(0);
    await refusal(h().provision(d), 'capacity');
    await d.dispose(a);
    expect((await d.capacity()).slotsFree).toBe(1);
    await h().provision(d);
  });

  it('disposes idempotently; a disposed handle is gone', async () => {
    const d = await h().driver();
    const handle = await h().provision(d);
    await d.dispose(handle);
    await d.dispose(handle);
    await refusal(d.exec(handle, h().fixture.commands.echo('x')), 'gone');
    if (d.describe().capabilities.usage) await refusal(d.usage(handle), 'gone');
    const forged = { ...handle, id: `${handle.id.slice(0, 20)}-forged` };
    await d.dispose(forged);
    await refusal(d.exec(forged, h().fixture.commands.echo('x')), 'gone');
  });

  it('reaps nothing a live instance holds (or refuses reap as unsupported)', async () => {
    const d = await h().driver();
    const handle = await h().provision(d);
    if (!d.describe().capabilities.reap) {
      await refusal(d.reap({ labels: { tenant: h().tenant } }), 'unsupported');
      return;
    }
    const reaped = await d.reap({ labels: { tenant: h().tenant } });
    expect(reaped.map((r) => ReapedSandbox.parse(r).id)).not.toContain(handle.id);
    const r = await d.exec(handle, h().fixture.commands.echo('still-here'));
    expect(r.exitCode).toBe(0);
    expect(await d.reap({ labels: { tenant: `${h().tenant}-nobody` } })).toEqual([]);
  });

  it('throws only PlacementErrors for driver outcomes; malformed input is a ZodError that changes nothing', async () => {
    // The ten codes are driver outcomes, exactly as the issue lists them. Input that does not parse (a
    // caller's bug, the same on every driver) is refused by the exported zod schemas with zod's ZodError
    // before the driver acts: hosts map it to 400 (the control plane's errorToProblem does).
    const d = await h().driver();
    const caps = d.describe().capabilities;
    const handle = await h().provision(d);
    const before = await d.capacity();
    const zodRefusal = async (p: () => Promise<unknown>) => {
      let err: unknown;
      try {
        await p();
      } catch (e) {
        err = e;
      }
      expect(isPlacementError(err)).toBe(false);
      expect((err as Error | undefined)?.name).toBe('ZodError');
    };
    const bogus = { ...handle, id: 42 } as unknown as SandboxHandle;
    const echo = h().fixture.commands.echo('ok');
    await zodRefusal(() => d.provision(h().spec({ limits: { wallTimeoutMs: MAX_WALL_TIMEOUT_MS + 1 } })));
    await zodRefusal(() => d.provision({ labels: { tenant: '', runId: 'r', kind: 'command' } }));
    await zodRefusal(() => d.exec(handle, []));
    await zodRefusal(() => d.exec(handle, echo, { timeoutMs: -1 }));
    await zodRefusal(() => d.exec(handle, echo, { timeoutMs: MAX_WALL_TIMEOUT_MS + 1 }));
    await zodRefusal(() => d.exec(bogus, echo));
    await zodRefusal(() => d.dispose(bogus));
    if (caps.stream) await zodRefusal(() => d.stream(handle, echo, { size: { cols: 0, rows: 24 } }));
    if (caps.usage) await zodRefusal(() => d.usage(bogus));
    if (caps.restore) await zodRefusal(() => d.restore(handle, { address: 'nope', bytes: new Uint8Array() }));
    if (caps.reap) await zodRefusal(() => d.reap({ labels: { tenant: 5 as unknown as string } }));
    expect(await d.capacity()).toEqual(before);
    expect((await d.exec(handle, echo)).exitCode).toBe(0);
  });
}
