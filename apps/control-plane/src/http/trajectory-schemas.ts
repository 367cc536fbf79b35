// The zod schemas of the trajectory routes (issue 12): pages, streams, imports, scores, policy, deletions.
import { TraceEvent } from '@everdict/run-model';
import { z } from '@hono/zod-openapi';
import { GraderSpecs } from '../services/types.js';
import { named } from './openapi.js';

export { json } from './openapi.js';

export const Ts = z.string().openapi({ format: 'date-time' });
export const Offset = z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
export const TraceEventSchema = named(TraceEvent, 'TraceEvent');

export const TrajectoryPageQuery = z.object({
  offset: Offset.default(0).openapi({ description: 'First event (counted in events from 0).' }),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

export const TrajectoryPageSchema = z
  .object({
    items: z.array(TraceEventSchema),
    nextOffset: z.number().int().openapi({ description: 'Pass as `offset` for the next page.' }),
    eventCount: z.number().int(),
    sealed: z.boolean(),
  })
  .openapi('TrajectoryPage');

export const StreamQuery = z.object({
  offset: Offset.default(0).openapi({ description: 'First event to send (Last-Event-ID overrides).' }),
  limit: z.coerce.number().int().min(1).max(100_000).default(10_000).openapi({
    description: 'The stream ends after this many events (reconnect with Last-Event-ID for more).',
  }),
});
export const StreamHeaders = z.object({
  'last-event-id': z
    .string()
    .regex(/^\d{1,15}$/)
    .optional()
    .openapi({ description: 'Resume after this event id (an offset this stream sent).' }),
});

export const Provenance = z
  .object({ source: z.string(), externalId: z.string(), pulledAt: Ts })
  .openapi('TrajectoryProvenance');
export const TrajectoryScoreSchema = z
  .object({
    id: z.string(),
    trajectoryId: z.string(),
    grader: z.string(),
    graderType: z.string(),
    value: z.number(),
    passed: z.boolean().nullable(),
    detail: z.unknown(),
    digest: z.string(),
    createdAt: Ts,
  })
  .openapi('TrajectoryScore');
export const ImportedSchema = z
  .object({
    trajectoryId: z.string(),
    provenance: Provenance,
    digest: z.string(),
    eventCount: z.number().int(),
    sealedAt: Ts,
    scores: z.array(TrajectoryScoreSchema),
  })
  .openapi('ImportedTrajectory');

export const Text = z.string().min(1).max(2000);
export const ImportedQuery = z.object({ source: Text.max(100), externalId: Text });
export const ScoreBody = z.object({ graders: GraderSpecs }).openapi('ScoreTrajectory');
export const PolicySchema = z
  .object({
    trajectoryRetentionDays: z.number().int().min(1).max(100_000).nullable().openapi({
      description: 'Days a sealed trajectory is kept (evidence excepted); null keeps everything.',
    }),
  })
  .openapi('TrajectoryPolicy');
export const DeletionSchema = z
  .object({
    id: z.string(),
    trajectoryId: z.string(),
    digest: z.string(),
    sealedAt: Ts,
    deletedAt: Ts,
    reason: z.string(),
    record: z.record(z.string(), z.unknown()),
  })
  .openapi('TrajectoryDeletion');
export const DeletionsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  trajectoryId: z.string().min(1).max(200).optional(),
});

export const OtlpJsonBody = z
  .object({ resourceSpans: z.array(z.record(z.string(), z.unknown())).optional() })
  .catchall(z.unknown())
  .openapi('ExportTraceServiceRequest', {
    description:
      'OTLP/HTTP ExportTraceServiceRequest (JSON encoding: hex ids, string or number 64-bit ints).',
  });
