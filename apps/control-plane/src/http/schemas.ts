// Response shapes for the OpenAPI document, mirroring the service views. Request bodies and queries are
// the services' own zod inputs (src/services/types.ts), so validation and docs cannot drift apart; the
// assertions at the bottom make the type checker flag a view that drifts from its documented shape.

import { GroupStatus, PlatformEvent, Run, Score, Scoring } from '@everdict/run-model';
import { z } from '@hono/zod-openapi';
import type { RecordView, RunView } from '../ledger/views.js';
import type {
  AdmissionView,
  ApiKeyView,
  CreatedKeyView,
  EventView,
  FiringPage,
  GroupView,
  Page,
  ScoringView,
  SubscriptionView,
} from '../services/types.js';

const Obj = z.record(z.string(), z.unknown());
const Ts = z.string().openapi({ format: 'date-time' });

export const IdParam = z.object({
  id: z
    .string()
    .min(1)
    .max(200)
    .openapi({ param: { name: 'id', in: 'path' }, example: 'run_01JEXAMPLE' }),
});

// run-model's schemas may be built before @hono/zod-openapi extends zod (bundle import order), so they are
// never given `.openapi()` themselves: their own field schemas are re-wrapped here, nothing redefined.
/** One grader's score of one run: run-model's `Score`. */
export const ScoreSchema = z.strictObject(Score.shape).openapi('Score');

/** A run as the API shows it: the run-model `Run` (nothing here redefines it) plus ledger facts. */
export const RunSchema = z
  .intersection(
    Run,
    z.object({
      causalDepth: z.number().int().openapi({ description: 'Hops from the root of its causal tree.' }),
      record: z.object({ head: z.string(), length: z.number().int() }),
    }),
  )
  .openapi('Run');

export function pageOf<T extends z.ZodType>(item: T, name: string) {
  return z.object({ items: z.array(item), nextCursor: z.string().nullable() }).openapi(name);
}

export const RunPageSchema = pageOf(RunSchema, 'RunPage');

/** A fact from the outbox (run-model `PlatformEvent`); its `id` is the outbox position. */
export const EventSchema = PlatformEvent;

export const EventListSchema = pageOf(EventSchema, 'RunEventPage');

export const RecordSchema = z
  .object({
    wire: z.unknown().openapi({ description: 'The sandbox.runrecord/1 wire form.' }),
    verify: z.object({
      ok: z.boolean(),
      head: z.string().optional(),
      length: z.number().optional(),
      error: z.string().optional(),
      index: z.number().optional(),
      phase: z.string().optional(),
      idleUj: z.string().optional(),
      account: z.string().optional(),
      cost: z
        .object({
          activeUj: z.string(),
          idleUj: z.string(),
          totalUj: z.string(),
          unresolved: z.number(),
        })
        .optional()
        .openapi({
          description:
            'runrecord `costToJson`: microjoules as decimal strings (exact; they may exceed 2^53), `unresolved` = executed segments with no bundled body.',
        }),
      signedBy: z.array(z.string()).optional(),
    }),
  })
  .openapi('RunRecord');

/** One application of graders to a group: run-model's `Scoring` (aggregate per grader, skipped runs). */
export const ScoringSchema = z.strictObject(Scoring.shape).openapi('Scoring');

export const GroupSchema = z
  .object({
    id: z.string(),
    tenantId: z.string(),
    kind: z.enum(['experiment', 'scorecard', 'conversation', 'batch']),
    label: z.string(),
    spec: Obj,
    runIds: z.array(z.string()),
    rollup: z.object({
      total: z.number().int(),
      byStatus: z.record(z.string(), z.number()),
      status: z.union([GroupStatus, z.literal('empty')]).openapi({
        description: "run-model's rollup of the member statuses (`partial`: some succeeded, some not).",
      }),
      usage: z
        .object({
          inputTokens: z.number(),
          outputTokens: z.number(),
          cacheReadTokens: z.number(),
          cacheWriteTokens: z.number(),
          costUsd: z.number(),
          llmCalls: z.number(),
          cpuTimeMs: z.number(),
        })
        .openapi({
          description:
            "What the group's runs used so far, summed (run-model's addUsage over each run's reported usage; a measure a run did not report counts 0), their reported CPU time beside it.",
        }),
    }),
    scoring: ScoringSchema.nullable(),
    createdBy: z.string(),
    createdAt: Ts,
    updatedAt: Ts,
  })
  .openapi('RunGroup');

export const GroupPageSchema = pageOf(GroupSchema, 'RunGroupPage');

export const SubscriptionSchema = z
  .object({
    id: z.string(),
    tenantId: z.string(),
    name: z.string(),
    selector: z.object({ kind: z.string(), filter: Obj }),
    schedule: z.object({ cron: z.string(), timezone: z.string() }).nullable(),
    runSpec: Obj,
    cooldownSec: z.number().int(),
    maxDepth: z.number().int(),
    enabled: z.boolean(),
    disabledReason: z.enum(['disabled', 'key_revoked']).nullable().openapi({
      description:
        'Why it does not fire: `disabled` (PATCH `enabled: false`) or `key_revoked` (the API key that created it — whose authority it acts with — is revoked; it cannot be enabled again).',
    }),
    lastFiredAt: Ts.nullable(),
    nextFireAt: Ts.nullable().openapi({
      description:
        "An enabled schedule's next slot in its time zone's reading of its cron (null for an event trigger, and for a schedule that is not firing).",
    }),
    createdBy: z.string(),
    createdAt: Ts,
  })
  .openapi('Subscription');

export const FiringSchema = z
  .object({
    eventId: z.string().openapi({ description: 'The outbox event it answered (a decimal event id).' }),
    at: Ts,
    outcome: z.enum(['created', 'refused']),
    runId: z.string().nullable(),
    refusal: z
      .object({ code: z.string(), rule: z.string().nullable(), detail: z.string().nullable() })
      .nullable()
      .openapi({
        description:
          "Why no run: the causation rule (`self_cause`, `cooldown`, `disabled`), `key_revoked`, `invalid_spec`, or the gate's refusal code with its rule (`capacity_exceeded` + `depth`, `envelope_exhausted` + `envelope`, …); `detail` in words.",
      }),
  })
  .openapi('Firing');

export const FiringPageSchema = z
  .object({ items: z.array(FiringSchema), nextBefore: z.string().nullable() })
  .openapi('FiringPage');

export const ApiKeySchema = z
  .object({
    id: z.string(),
    tenantId: z.string(),
    role: z.enum(['member', 'admin']),
    label: z.string(),
    createdAt: Ts,
    revokedAt: Ts.nullable(),
  })
  .openapi('ApiKey');

export const CreatedKeySchema = ApiKeySchema.extend({
  key: z.string().openapi({ description: 'The raw key. Shown exactly once; only its hash is stored.' }),
}).openapi('CreatedApiKey');

// ---- drift guards: a view that no longer fits its documented schema fails the type check ----
type Fits<View, Schema extends z.ZodType> = View extends z.infer<Schema> ? true : never;
const fits = <T extends true>(): T | undefined => undefined;
fits<Fits<RunView, typeof RunSchema>>();
fits<Fits<Page<RunView>, typeof RunPageSchema>>();
fits<Fits<EventView, typeof EventSchema>>();
fits<Fits<RecordView, typeof RecordSchema>>();
fits<Fits<GroupView, typeof GroupSchema>>();
fits<Fits<ScoringView, typeof ScoringSchema>>();
fits<Fits<SubscriptionView, typeof SubscriptionSchema>>();
fits<Fits<FiringPage, typeof FiringPageSchema>>();
fits<Fits<ApiKeyView, typeof ApiKeySchema>>();
fits<Fits<CreatedKeyView, typeof CreatedKeySchema>>();

export const AdmissionSchema = z
  .object({
    decision: z.enum(['admitted', 'duplicate']),
    class: z.enum(['interactive', 'background', 'batch']),
    envelopeId: z.string(),
    position: z
      .object({ tenantAhead: z.number().int(), tenantQueued: z.number().int() })
      .nullable()
      .openapi({ description: "Where the run sits in its tenant's queue at admission." }),
  })
  .openapi('Admission');

export const CreatedRunSchema = z
  .object({ run: RunSchema, admission: AdmissionSchema })
  .openapi('CreatedRun');
/** A cancel's body (a run's, a group's): why, kept with the cancellation. */
export const RunCancelBody = z.object({ reason: z.string().max(1000).optional() }).openapi('CancelRun');

export const CancelledSchema = z
  .object({
    run: RunSchema,
    cancelled: z.array(z.string()).openapi({ description: 'Every run id cancelled.' }),
  })
  .openapi('Cancelled');
export const CreatedGroupSchema = z
  .object({ group: GroupSchema, runs: z.array(RunSchema) })
  .openapi('CreatedGroup');
export const ScoredSchema = z
  .object({ scoring: ScoringSchema, scores: z.array(ScoreSchema) })
  .openapi('Scored');
fits<Fits<AdmissionView, typeof AdmissionSchema>>();
