// API clients whose every call has a deadline. client-node's `makeApiClient` sends each request with no
// timeout: an apiserver (or a load balancer in front of it) that accepts the connection and never answers
// would hold provision, dispose or capacity forever. The same clients, with a middleware that gives every
// request an AbortSignal of `timeoutMs` (it covers the response body too), or of what `timeoutFor` says for it.
import { PlacementError } from '@everdict/placement';
import {
  createConfiguration,
  type KubeConfig,
  type Middleware,
  type RequestContext,
  type ResponseContext,
  ServerConfiguration,
} from '@kubernetes/client-node';
import type { ApiRequest } from './kubernetes-driver-config.js';

type ApiConstructor<T> = new (config: ReturnType<typeof createConfiguration>) => T;

export function apiClient<T>(
  kc: KubeConfig,
  type: ApiConstructor<T>,
  timeoutMs: number,
  timeoutFor?: (request: ApiRequest) => number | undefined,
): T {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig names no current cluster');
  const deadline: Middleware = {
    pre: async (context: RequestContext) => {
      const own = timeoutFor?.({ method: context.getHttpMethod(), url: new URL(context.getUrl()) });
      // Only a deadline AbortSignal.timeout takes (a positive integer of ms, ≤ 2^31 − 1); anything else: the default.
      const usable = own !== undefined && Number.isInteger(own) && own > 0 && own <= 2 ** 31 - 1;
      context.setSignal(AbortSignal.timeout(usable ? own : timeoutMs));
      return context;
    },
    post: async (context: ResponseContext) => context,
  };
  return new type(
    createConfiguration({
      baseServer: new ServerConfiguration(cluster.server, {}),
      authMethods: { default: kc },
      promiseMiddleware: [deadline],
    }),
  );
}

/** The HTTP status of a failed API call (undefined when no answer came). */
export const code = (error: unknown) => (error as { code?: number }).code;

/** An API failure (refused, timed out, unreachable) as this package's one error type. */
export function apiFailure(what: string, error: unknown, detail: Record<string, unknown>): PlacementError {
  if (error instanceof PlacementError) return error;
  const body = (error as { body?: unknown }).body;
  const why = typeof body === 'string' && body ? body : (error as Error).message;
  return new PlacementError('spawn_failed', `${what}: ${why}`, { ...detail, status: code(error) });
}
