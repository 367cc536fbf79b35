// How a run is doing, in words every console shares — so a held-open session never reads as a stuck batch.
import { z } from 'zod';
import { toMillis } from './primitives.js';
import type { Run } from './run.js';
import { isTerminalStatus } from './vocabulary.js';

/**
 * queued         waiting for admission or supply
 * in_progress    a task run working toward its own end
 * held_open      a session run in `running`: healthy, it ends when closed or expired, not by itself
 * awaiting_input parked on a person (approval, answer) — HITL
 * expired        not terminal, but past its hard expiresAt: the reaper is due
 * settled        terminal
 */
export const RunHealth = z.enum([
  'queued',
  'in_progress',
  'held_open',
  'awaiting_input',
  'expired',
  'settled',
]);
export type RunHealth = z.infer<typeof RunHealth>;

export function health(run: Pick<Run, 'status' | 'lifetime' | 'expiresAt'>, now: string): RunHealth {
  if (isTerminalStatus(run.status)) return 'settled';
  if (run.expiresAt !== undefined && toMillis(now) >= toMillis(run.expiresAt)) return 'expired';
  if (run.status === 'queued') return 'queued';
  if (run.status === 'awaiting_input') return 'awaiting_input';
  return run.lifetime === 'session' ? 'held_open' : 'in_progress';
}

/** A session run sitting in running: legitimately open, not stuck. */
export function isHeldOpen(run: Pick<Run, 'status' | 'lifetime'>): boolean {
  return run.status === 'running' && run.lifetime === 'session';
}
