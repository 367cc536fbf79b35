// What every route group is built from: the application services and the app's own edge machinery.
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { ControlPlaneServices } from '../services/api.js';
import type { TrajectoryService } from '../trajectory/service.js';
import type { Lifecycle } from './lifecycle.js';

export interface RouteDeps {
  readonly services: ControlPlaneServices;
  readonly metrics: Metrics;
  readonly lifecycle: Lifecycle;
  readonly log: Logger;
  /** SSE keep-alive comment interval. */
  readonly heartbeatMs: number;
  /** Trajectories (issue 12); absent → the trajectory routes answer 503 storage_unavailable. */
  readonly trajectories?: TrajectoryService | null;
}
