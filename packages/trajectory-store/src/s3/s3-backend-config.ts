// Options of the S3-compatible backend, parsed at the boundary. They mirror the app's environment:
// EVERDICT_S3_BUCKET → bucket, EVERDICT_S3_ENDPOINT → endpoint, EVERDICT_S3_REGION → region.
// Credentials come from the AWS SDK's default chain (environment, shared files, instance roles) unless
// given here.
import { z } from 'zod';

export const MIN_PART_SIZE = 5 * 1024 * 1024; // S3's floor for every part but the last

export const S3BackendConfig = z.strictObject({
  bucket: z.string().min(3).max(63),
  /** A custom endpoint (MinIO, R2, s3rver); absent → AWS's endpoint for the region. */
  endpoint: z.url().optional(),
  region: z.string().min(1).default('us-east-1'),
  /** Keys start with this (e.g. `everdict/`); each tenant is then under `<prefix>tenants/<tenant>/`. */
  prefix: z
    .string()
    .regex(/^([A-Za-z0-9._-]+\/)*$/, 'a prefix is empty or ends with /')
    .default(''),
  /** Path-style addressing; defaults to true when an endpoint is given (what S3-compatible servers want). */
  forcePathStyle: z.boolean().optional(),
  /** Objects larger than this go up in parts of this size (multipart upload). */
  partSize: z
    .int()
    .min(MIN_PART_SIZE)
    .default(8 * 1024 * 1024),
  /** Explicit credentials; absent → the SDK's default provider chain. */
  credentials: z
    .strictObject({
      accessKeyId: z.string().min(1),
      secretAccessKey: z.string().min(1),
      sessionToken: z.string().optional(),
    })
    .optional(),
});
export type S3BackendConfig = z.input<typeof S3BackendConfig>;
