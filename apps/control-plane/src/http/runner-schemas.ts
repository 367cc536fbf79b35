// The runner routes' schemas (OpenAPI components), apart from the routes (http/runners.ts): what the
// administration routes (tenant and operator) and the runner's own calls answer.
import { z } from '@hono/zod-openapi';

export const CapabilitiesSchema = z
  .object({
    drivers: z.array(z.enum(['process', 'kubernetes'])),
    kinds: z.array(z.enum(['command', 'eval', 'sandbox'])),
    images: z.array(z.string()),
    slots: z.number().int(),
    namespaces: z.array(z.string()).optional(),
  })
  .openapi('RunnerCapabilities');
export const PairingTokenSchema = z
  .object({ token: z.string(), expiresAt: z.string() })
  .openapi('PairingToken');
export const PairedSchema = z
  .object({ runnerId: z.string(), credential: z.string() })
  .openapi('PairedRunner');
export const RunnerSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    shared: z.boolean(),
    tenantId: z.string().nullable(),
    capabilities: CapabilitiesSchema,
    state: z.enum(['active', 'draining', 'revoked']),
    publicKey: z.string(),
    createdAt: z.string(),
    lastHeartbeatAt: z.string().nullable(),
    revokedAt: z.string().nullable(),
    drainedAt: z.string().nullable(),
    drainedBy: z
      .string()
      .nullable()
      .openapi({ description: 'Who drained it: the API key id, or `operator` (the service token).' }),
    revokedBy: z
      .string()
      .nullable()
      .openapi({ description: 'Who revoked it: the API key id, or `operator` (the service token).' }),
    leasesHeld: z.number().int(),
    requeued: z.array(z.string()).optional(),
  })
  .openapi('Runner');
export const HarnessSchema = z
  .object({
    id: z.string(),
    version: z.string(),
    image: z.string(),
    command: z.array(z.string()),
    createdBy: z.string(),
    createdAt: z.string(),
  })
  .openapi('Harness');
export const LeaseSchema = z
  .object({
    runId: z.string(),
    tenant: z.string(),
    kind: z.string(),
    epoch: z.number().int(),
    attempt: z.number().int(),
    spec: z.record(z.string(), z.unknown()),
    unitId: z.string(),
    grantsId: z.string(),
    recordHead: z.string(),
    leaseMs: z.number().int(),
    heartbeatMs: z.number().int(),
    grants: z.object({ network: z.enum(['none', 'granted']) }),
    seqFrom: z.number().int(),
    harness: z
      .object({ id: z.string(), version: z.string(), image: z.string(), command: z.array(z.string()) })
      .optional(),
  })
  .openapi('Lease');

/** A JSON body the route declares loosely (an object, described) and the runner service parses strictly. */
export const looseBody = (description: string) => ({
  required: true,
  content: {
    'application/json': { schema: z.record(z.string(), z.unknown()).openapi({ description }) },
  },
});
/** `looseBody`, optional. */
export const optionalLooseBody = (description: string) => ({ ...looseBody(description), required: false });
