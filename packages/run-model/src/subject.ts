// What was activated: one strict subject schema per known kind, a generic JSON object for open kinds.
import { z } from 'zod';
import { Id, JsonObject, JsonValue } from './primitives.js';
import { isKnownRunKind, type KnownRunKind, PermissionMode, RunKind } from './vocabulary.js';

const Name = z.string().min(1).max(500);
/** An OCI image reference (`registry/repo:tag` or `…@sha256:…`). */
export const ImageRef = z.string().min(1).max(1000);

export const HarnessRef = z.strictObject({ id: Id, version: Name });
export type HarnessRef = z.infer<typeof HarnessRef>;

/**
 * eval: one case of a harness. `caseSpec` is the case the harness is given (its workspace's `case.json`);
 * `expected` is the case's answer key, for the graders only (`subject.expected`): whoever executes the run
 * never hands it to the harness, so the system under evaluation cannot read its own answer.
 */
export const EvalSubject = z.strictObject({
  harness: HarnessRef,
  caseId: Id,
  caseSpec: JsonObject.optional(),
  expected: JsonValue.optional(),
});
export type EvalSubject = z.infer<typeof EvalSubject>;

/** agent: one activation (or chat turn) of an agent version. */
export const AgentSubject = z.strictObject({
  agentId: Id,
  agentVersion: Name,
  model: Name.optional(),
  conversationId: Id.optional(),
  permissionMode: PermissionMode,
});
export type AgentSubject = z.infer<typeof AgentSubject>;

/**
 * command: an argv run in an image (no `image` = the runner's `default`), optionally about a workspace file
 * (`path`, the Files viewer's Run). Its outputs: `exitCode` and `result` = CommandResult.
 */
export const CommandSubject = z.strictObject({
  command: z.array(z.string()).min(1),
  image: ImageRef.optional(),
  path: z.string().min(1).max(4096).optional(),
});
export type CommandSubject = z.infer<typeof CommandSubject>;

/** The image a command runs in when its subject names none. */
export const DEFAULT_IMAGE = 'default';

/** A command's image: its own, or `default`. */
export const commandImage = (s: CommandSubject): string => s.image ?? DEFAULT_IMAGE;

/** A harness as the registry defines it: an image and the argv run in it for each case (versions immutable). */
export const Harness = z.strictObject({
  id: Id,
  version: Name,
  image: ImageRef,
  command: z.array(z.string()).min(1),
});
export type Harness = z.infer<typeof Harness>;

/** Where a sandbox's contents come from: an environment to verify, a harness to play with, a run to debug. */
export const SandboxSource = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('environment'), environmentId: Id, version: Name.optional() }),
  z.strictObject({ type: z.literal('harness'), harness: HarnessRef }),
  z.strictObject({ type: z.literal('run'), runId: Id }),
]);
export type SandboxSource = z.infer<typeof SandboxSource>;

/** sandbox: an environment image brought up to be poked at (no `image` = the runner's `default`). */
export const SandboxSubject = z.strictObject({
  image: ImageRef.default('default'),
  source: SandboxSource.optional(),
});
export type SandboxSubject = z.infer<typeof SandboxSubject>;

/** analysis: a saved view, or an inline configuration — exactly one of the two. */
export const AnalysisSubject = z.union([
  z.strictObject({ viewId: Id }),
  z.strictObject({ config: JsonObject }),
]);
export type AnalysisSubject = z.infer<typeof AnalysisSubject>;

/** The subject of a kind nobody here knows yet: any JSON object. */
export const OpenSubject = JsonObject;
export type OpenSubject = z.infer<typeof OpenSubject>;

export const SUBJECT_SCHEMAS = {
  eval: EvalSubject,
  agent: AgentSubject,
  command: CommandSubject,
  sandbox: SandboxSubject,
  analysis: AnalysisSubject,
} as const satisfies Record<KnownRunKind, z.ZodType>;

export interface SubjectByKind {
  eval: EvalSubject;
  agent: AgentSubject;
  command: CommandSubject;
  sandbox: SandboxSubject;
  analysis: AnalysisSubject;
}

/** A kind paired with its subject. Known kinds carry their typed subject; any other kind an open one. */
export type KindedSubject =
  | { [K in KnownRunKind]: { kind: K; subject: SubjectByKind[K] } }[KnownRunKind]
  | { kind: string & {}; subject: OpenSubject };

/** The schema for a kind's subject: strict for the five known kinds, a JSON object otherwise. */
export function subjectSchemaFor(kind: string): z.ZodType<SubjectByKind[KnownRunKind] | OpenSubject> {
  return isKnownRunKind(kind) ? SUBJECT_SCHEMAS[kind] : OpenSubject;
}

/**
 * Validate `subject` against `kind` inside a larger schema's transform: the typed pair, or undefined
 * after adding issues that point at `subject.…` (so a bad eval subject reads as such, not as "no union
 * member matched").
 */
export function checkKindedSubject(
  kind: string,
  subject: unknown,
  ctx: z.RefinementCtx,
): KindedSubject | undefined {
  const parsed = subjectSchemaFor(kind).safeParse(subject);
  if (parsed.success) return { kind, subject: parsed.data } as KindedSubject;
  for (const issue of parsed.error.issues) ctx.addIssue({ ...issue, path: ['subject', ...issue.path] });
  return undefined;
}

/** `{kind, subject}` validated together: any kind string parses, the five known kinds strictly. */
export const KindedSubject = z
  .strictObject({ kind: RunKind, subject: z.unknown() })
  .transform((value, ctx): KindedSubject => checkKindedSubject(value.kind, value.subject, ctx) ?? z.NEVER);

/** Narrow a kinded value to one known kind, with its typed subject. */
export function isKind<K extends KnownRunKind, T extends KindedSubject>(
  value: T,
  kind: K,
): value is Extract<T, { kind: K }> {
  return value.kind === kind;
}

/** The typed subject of a known kind, or undefined when the value is another kind. */
export function subjectOf<K extends KnownRunKind>(
  value: KindedSubject,
  kind: K,
): SubjectByKind[K] | undefined {
  return value.kind === kind ? (value.subject as SubjectByKind[K]) : undefined;
}
