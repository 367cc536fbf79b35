// metav1.Status, the body of every error the API server answers (and of exec's status channel).

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface ApiStatus {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  details?: { name?: string; group?: string; kind?: string; uid?: string; causes?: StatusCause[] };
  code: number;
}

/** A failure the server answers with `code` as the HTTP status and a Status body. */
export class StatusError extends Error {
  readonly status: ApiStatus;
  constructor(status: ApiStatus) {
    super(status.message);
    this.name = 'StatusError';
    this.status = status;
  }
}

export interface Target {
  group: string;
  resource: string;
  name?: string;
}

function failure(code: number, reason: string, message: string, details?: ApiStatus['details']): StatusError {
  return new StatusError({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    ...(details ? { details } : {}),
    code,
  });
}

/** `pods` or `deployments.apps`: how the apiserver names a resource in messages. */
export function qualified(target: Target): string {
  return target.group ? `${target.resource}.${target.group}` : target.resource;
}

export const errors = {
  notFound: (t: Target) =>
    failure(404, 'NotFound', `${qualified(t)} "${t.name ?? ''}" not found`, {
      name: t.name,
      group: t.group || undefined,
      kind: t.resource,
    }),
  alreadyExists: (t: Target) =>
    failure(409, 'AlreadyExists', `${qualified(t)} "${t.name ?? ''}" already exists`, {
      name: t.name,
      group: t.group || undefined,
      kind: t.resource,
    }),
  conflict: (t: Target, why: string) =>
    failure(409, 'Conflict', `Operation cannot be fulfilled on ${qualified(t)} "${t.name ?? ''}": ${why}`, {
      name: t.name,
      group: t.group || undefined,
      kind: t.resource,
    }),
  forbidden: (t: Target, why: string) =>
    failure(403, 'Forbidden', `${qualified(t)}${t.name ? ` "${t.name}"` : ''} is forbidden: ${why}`, {
      name: t.name,
      group: t.group || undefined,
      kind: t.resource,
    }),
  invalid: (kind: string, group: string, name: string, causes: StatusCause[]) =>
    failure(
      422,
      'Invalid',
      `${kind} "${name}" is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join(', ')}`,
      { name, group: group || undefined, kind, causes },
    ),
  badRequest: (message: string) => failure(400, 'BadRequest', message),
  unauthorized: () => failure(401, 'Unauthorized', 'Unauthorized'),
  methodNotAllowed: () =>
    failure(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource'),
  unsupportedMediaType: (type: string) =>
    failure(
      415,
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got ${type})`,
    ),
  pathNotFound: () => failure(404, 'NotFound', 'the server could not find the requested resource'),
  expired: (message: string) => failure(410, 'Expired', message),
  internal: (message: string) => failure(500, 'InternalError', `Internal error occurred: ${message}`),
};

/** The Status a successful delete of a non-pod object returns. */
export function deleted(target: Target, uid: string): Record<string, unknown> {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Success',
    details: { name: target.name, group: target.group || undefined, kind: target.resource, uid },
  };
}
