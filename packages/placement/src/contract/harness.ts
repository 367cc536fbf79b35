// The suite's per-test bookkeeping: drivers made, sandboxes provisioned (disposed after each test), and
// the assertion every refusal must pass (a PlacementError with the expected code).
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { Driver } from '../driver.js';
import { PlacementError, type PlacementErrorCode } from '../errors.js';
import type { ExecResult } from '../exec.js';
import { utf8 } from '../output.js';
import type { ProvisionSpecInput, SandboxHandle } from '../spec.js';
import type { DriverFixture } from './fixture.js';

export class SuiteHarness {
  private readonly made: Driver[] = [];
  private readonly held: Array<[Driver, SandboxHandle]> = [];
  private seq = 0;
  readonly tenant: string;

  constructor(readonly fixture: DriverFixture) {
    this.tenant = `${fixture.tenant ?? 'contract'}-${randomBytes(4).toString('hex')}`;
  }

  async driver(slots?: number): Promise<Driver> {
    const d = await this.fixture.make(slots === undefined ? {} : { slots });
    this.made.push(d);
    return d;
  }

  runId(): string {
    this.seq += 1;
    return `run-${this.seq}-${randomBytes(3).toString('hex')}`;
  }

  spec(extra: Partial<ProvisionSpecInput> = {}, runId = this.runId()): ProvisionSpecInput {
    return { labels: { tenant: this.tenant, runId, kind: 'command' }, ...extra };
  }

  async provision(
    d: Driver,
    extra: Partial<ProvisionSpecInput> = {},
    runId?: string,
  ): Promise<SandboxHandle> {
    const h = await d.provision(this.spec(extra, runId));
    this.held.push([d, h]);
    return h;
  }

  async cleanup(): Promise<void> {
    for (const [d, h] of this.held.splice(0)) await d.dispose(h).catch(() => undefined);
    for (const d of this.made.splice(0)) await this.fixture.close?.(d);
  }
}

/** Awaits `p` and asserts it rejected with a PlacementError of `code`; returns the error. */
export async function refusal(
  p: Promise<unknown> | (() => unknown),
  code: PlacementErrorCode,
): Promise<PlacementError> {
  let err: unknown;
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    err = e;
  }
  expect(err, `expected a PlacementError ${code}`).toBeInstanceOf(PlacementError);
  expect((err as PlacementError).code).toBe(code);
  return err as PlacementError;
}

export function out(r: ExecResult): string {
  return utf8(r.stdout);
}

export async function collect(stream: AsyncIterable<Uint8Array | string>): Promise<string> {
  let s = '';
  for await (const c of stream) s += typeof c === 'string' ? c : utf8(c);
  return s;
}
