// Tenant and global admission policy: zod schemas are the boundary, the inferred types are what kernels read.
import { RunCause, RunKind } from '@everdict/run-model';
import { z } from 'zod';
import { parseOrThrow } from './errors.js';
import { MAX_WEIGHT, MIN_WEIGHT } from './wfq.js';

/**
 * The largest count a policy or cap may hold: a SQL store keeps run counts, caps and quotas in 32-bit integer
 * columns, so a larger one it cannot store (or compare) would be accepted by one store and fail in another.
 */
export const MAX_COUNT = 2_147_483_647;
const count = z.number().int().nonnegative().max(MAX_COUNT);
const positiveCount = z.number().int().positive().max(MAX_COUNT);

/** Caps of an envelope; an absent cap is unlimited. Tokens are kept as doubles: any safe integer. */
export const EnvelopeCaps = z.object({
  usd: z.number().nonnegative().optional(),
  tokens: z.number().int().nonnegative().optional(),
  runs: count.optional(),
});
export type EnvelopeCaps = z.infer<typeof EnvelopeCaps>;

/** A tenant's session pool: held-open runs draw from it, not from the task queue. */
export const SessionPolicy = z.object({
  /** Held-open runs the tenant may have at once. */
  maxSessions: count.default(8),
  /** Of those, slots only member-caused sessions may take: agents never crowd a person out. */
  memberReserve: count.default(2),
});
export type SessionPolicy = z.infer<typeof SessionPolicy>;

/**
 * Cascade opt-out (spec §5.5, O8): cancelling a run cancels its non-terminal descendants except those of
 * these kinds or causes — they survive, and so does everything they caused (the `cascade` kernel).
 */
export const CascadePolicy = z
  .object({
    skipKinds: z.array(RunKind).max(64).default([]),
    skipCauses: z.array(RunCause).max(RunCause.options.length).default([]),
  })
  .strict();
export type CascadePolicy = z.infer<typeof CascadePolicy>;
export type CascadePolicyInput = z.input<typeof CascadePolicy>;

export const TenantPolicy = z
  .object({
    /**
     * WFQ weight: a backlogged tenant's long-run share of dispatches is weight / Σ backlogged weights.
     * Bounded on both sides (1e-6 … 1e6): a weight near zero would blow the queue's virtual clock up.
     */
    weight: z.number().min(MIN_WEIGHT).max(MAX_WEIGHT).default(1),
    /** Queued (admitted, not yet dispatched) task runs before admission answers 429 queue_depth. */
    maxQueued: count.default(10_000),
    /** Dispatch quota: running task runs at once. At quota the tenant is skipped by dequeue, never refused. */
    maxConcurrent: positiveCount.default(64),
    /** Fan-out guard: runs one run may cause over its life. */
    maxChildrenPerRun: count.default(100),
    /** Fan-out guard: a root run has depth 0; a run caused at depth d has depth d + 1. */
    maxCausalDepth: z.number().int().nonnegative().default(8),
    /** The root envelope: the tenant budget every delegated slice draws from. */
    budget: EnvelopeCaps.default({}),
    /** In-flight (admitted, unsettled) runs under the root envelope; bounds the root's overshoot. */
    inFlightCap: positiveCount.default(100_000),
    session: SessionPolicy.default({ maxSessions: 8, memberReserve: 2 }),
    /** The longest a session may be held open from now: a touch extends up to this, never past it. */
    maxSessionTtlSec: positiveCount.max(366 * 24 * 60 * 60).default(86_400),
    /** What an open or parked session costs per hour, charged against the budget when it settles. */
    sessionUsdPerHour: z.number().nonnegative().max(1_000_000).default(0),
    /** Which descendants a cancel's cascade leaves alone. */
    cascade: CascadePolicy.default({ skipKinds: [], skipCauses: [] }),
  })
  .refine((p) => p.session.memberReserve <= p.session.maxSessions, {
    message: 'session.memberReserve must not exceed session.maxSessions',
  });
export type TenantPolicy = z.infer<typeof TenantPolicy>;
export type TenantPolicyInput = z.input<typeof TenantPolicy>;

export const GlobalPolicy = z
  .object({
    /** Held-open runs across all tenants. */
    maxSessions: count.default(1_000),
    /** Global slots only member-caused sessions may take. */
    memberReserve: count.default(0),
    /** An item queued this long is promoted past every class and served oldest-first (the aging guard). */
    agingMs: z.number().int().positive().default(30_000),
    /** Retry hint used when no completion estimate exists (429 concurrency / queue_depth). */
    retryBackoffMs: z.number().int().positive().default(1_000),
  })
  .refine((p) => p.memberReserve <= p.maxSessions, {
    message: 'memberReserve must not exceed maxSessions',
  });
export type GlobalPolicy = z.infer<typeof GlobalPolicy>;
export type GlobalPolicyInput = z.input<typeof GlobalPolicy>;

export function tenantPolicy(input: TenantPolicyInput = {}): TenantPolicy {
  return parseOrThrow(TenantPolicy, input, 'tenant policy');
}

export function globalPolicy(input: GlobalPolicyInput = {}): GlobalPolicy {
  return parseOrThrow(GlobalPolicy, input, 'global policy');
}
