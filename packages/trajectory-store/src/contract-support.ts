// What the backend contract's files share (contract.ts, contract-artifacts.ts): the harness a backend's test
// hands the contract, the tenant the contract writes under, and the check of a refusal's code.
import { expect } from 'vitest';
import type { ObjectBackend } from './backend.js';
import { isTrajectoryStoreError, type TrajectoryErrorCode } from './errors.js';
import type { TrajectoryStore } from './trajectory-store.js';

export interface BackendHarness {
  /** A backend over this harness's storage; each call is a fresh instance (a restart). */
  open(): Promise<ObjectBackend>;
  cleanup?(): Promise<void>;
}
export type BackendFactory = () => Promise<BackendHarness>;

/** The one test's store, its harness and a restart, as the contract's `beforeEach` sets them. */
export interface ContractContext {
  store(): TrajectoryStore;
  harness(): BackendHarness;
  restart(): Promise<TrajectoryStore>;
}

/** The tenant every contract test writes under. */
export const T = 'acme';

export async function expectCode(p: Promise<unknown>, code: TrajectoryErrorCode): Promise<void> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err, `expected ${code}`).not.toBeNull();
  expect(isTrajectoryStoreError(err) ? err.code : err).toBe(code);
}
