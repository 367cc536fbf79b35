// The agent routes' response schemas (OpenAPI components), apart from the routes (http/agents.ts).
import { z } from '@hono/zod-openapi';
import { RunSchema } from './schemas.js';

const Envelope = z
  .object({
    usd: z.number().optional(),
    tokens: z.number().int().optional(),
    runs: z.number().int().optional(),
    inFlight: z.number().int().optional(),
  })
  .openapi('AgentEnvelope');
const Pricing = z
  .object({
    inputUsdPerMTok: z.number(),
    outputUsdPerMTok: z.number(),
    cacheReadUsdPerMTok: z.number().optional(),
  })
  .openapi('AgentPricing');
export const AgentSchema = z
  .object({
    id: z.string(),
    tenantId: z.string(),
    name: z.string(),
    version: z.number().int(),
    enabled: z.boolean(),
    model: z.string(),
    systemPrompt: z.string(),
    tools: z.array(z.string()),
    envelope: Envelope,
    pricing: Pricing.optional(),
    maxStepsPerInterval: z.number().int(),
    createdBy: z.string(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('Agent');
export const ResolutionSchema = z
  .object({
    kind: z.enum(['approval', 'run', 'experiment']),
    callId: z.string(),
    approved: z.boolean().optional(),
    note: z.string().optional(),
    by: z.string().optional(),
    runId: z.string().optional(),
    status: z.enum(['succeeded', 'partial', 'failed', 'cancelled']).optional(),
    outputs: z.unknown().optional(),
    groupId: z.string().optional(),
    runs: z
      .array(z.object({ runId: z.string(), status: z.enum(['succeeded', 'failed', 'cancelled']) }))
      .optional(),
  })
  .openapi('CallResolution');
export const PendingCallSchema = z
  .object({
    callId: z.string(),
    kind: z.enum(['approval', 'run', 'experiment']),
    tool: z.string(),
    prompt: z.string().optional().openapi({ description: 'An approval’s question.' }),
    runId: z.string().optional().openapi({ description: 'The caused run a `run` call waits on.' }),
    groupId: z
      .string()
      .optional()
      .openapi({ description: 'The experiment group an `experiment` call waits on.' }),
    waitingOn: z.array(z.string()).optional().openapi({ description: 'Its runs not settled yet.' }),
    since: z.string(),
  })
  .openapi('PendingCall');
export const TurnLeaseSchema = z
  .object({
    runId: z.string(),
    tenant: z.string(),
    epoch: z.number().int(),
    leaseMs: z.number().int(),
    heartbeatMs: z.number().int(),
    unitId: z.string(),
    grantsId: z.string(),
    agent: z.record(z.string(), z.unknown()),
    record: z.unknown(),
    recordHead: z.string(),
    parkedAtMs: z.number().int().optional(),
    input: z.object({ text: z.string() }).optional(),
    resolutions: z.array(ResolutionSchema),
  })
  .openapi('TurnLease');
export const TurnDeclinedSchema = z
  .object({
    run: RunSchema,
    outcome: z.enum(['requeued', 'failed']).openapi({
      description:
        '`requeued`: released, ready again for every holder that has not declined it; `failed`: no paired host is left that could take it — the turn failed `no_compatible_host`.',
    }),
    reason: z.enum(['manifest_mismatch', 'snapshot_mismatch']),
    declinedBy: z.array(z.string()).openapi({ description: 'The holders that declined this turn so far.' }),
  })
  .openapi('TurnDeclined');
