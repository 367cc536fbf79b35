// What a run left behind — the join point: artifacts, published files, scores, a summary — plus its error.
import { z } from 'zod';
import { Id, JsonObject, JsonValue, Timestamp } from './primitives.js';

/** A blob the run offloaded (logs bundle, screenshot, report); `uri` is where the object store keeps it. */
export const ArtifactRef = z.strictObject({
  name: z.string().min(1),
  uri: z.string().min(1),
  contentType: z.string().optional(),
  bytes: z.int().nonnegative().optional(),
  digest: z.string().optional(),
});
export type ArtifactRef = z.infer<typeof ArtifactRef>;

/** A workspace file revision the run published (the filesystem records who wrote it). */
export const FileRef = z.strictObject({ path: z.string().min(1), revision: Id });
export type FileRef = z.infer<typeof FileRef>;

/** A score attached to the run: enough to list without a join; the Score row is the record. */
export const ScoreRef = z.strictObject({
  scoreId: Id,
  scoringId: Id,
  grader: z.string().min(1),
  value: z.number(),
  passed: z.boolean().optional(),
});
export type ScoreRef = z.infer<typeof ScoreRef>;

/**
 * outputs = { artifacts[], files[], scores[], summary? } plus two additions graders read:
 * `exitCode` (a command's or case's process exit) and `result` (a structured final answer, any JSON).
 */
export const RunOutputs = z.strictObject({
  artifacts: z.array(ArtifactRef),
  files: z.array(FileRef),
  scores: z.array(ScoreRef),
  summary: z.string().optional(),
  exitCode: z.int().optional(),
  result: JsonValue.optional(),
});
export type RunOutputs = z.infer<typeof RunOutputs>;

/** Bytes kept of each stream in a command's `outputs.result` (the tail; the whole streams are in the trajectory). */
export const COMMAND_TAIL_BYTES = 64 * 1024;

/**
 * A command's `outputs.result`: the tails of its streams (at most COMMAND_TAIL_BYTES each, UTF-8) and whether
 * either was cut. Its exit code is `outputs.exitCode`.
 */
export const CommandResult = z.strictObject({
  stdout: z.string(),
  stderr: z.string(),
  truncated: z.boolean(),
});
export type CommandResult = z.infer<typeof CommandResult>;

/** Fresh empty outputs (a new object each call: outputs are never shared between runs). */
export function emptyOutputs(): RunOutputs {
  return { artifacts: [], files: [], scores: [] };
}

/** Why a run failed: a stable code, a message, whether a retry could help. */
export const RunError = z.strictObject({
  code: z.string().min(1),
  message: z.string(),
  retryable: z.boolean().optional(),
  detail: JsonObject.optional(),
});
export type RunError = z.infer<typeof RunError>;

/** Where the run's trajectory lives in the trajectory store; sealed once the run is terminal. */
export const TrajectoryRef = z.strictObject({
  ref: z.string().min(1),
  eventCount: z.int().nonnegative().optional(),
  sealedAt: Timestamp.optional(),
  digest: z.string().optional(),
});
export type TrajectoryRef = z.infer<typeof TrajectoryRef>;
