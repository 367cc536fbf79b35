// Which executors this deployment has, and so which runs can ever execute. Consulted at EVERY create door
// (POST /runs, groups, subscriptions and their triggers, the agent bridge, internal activations — all go
// through lifecycle.prepareCreate) before admission: a kind/placement no executor can ever take is refused
// 422 `no_placement` and nothing is saved. "Ever": a capable executor that is busy or offline still
// counts — the run queues.
//
// Today's executors: the inline analysis lane (kind `analysis`, placement `inline`) and the agent bridge
// (kind `agent`, placement `runtime`: the agent service runs it and reports). A runner
// registry extends this with `register(declaredRunner(...))` for each registered runner's declared kinds
// (and images); `register` returns the function that removes the lane again.
import { ControlPlaneError } from '../errors.js';

/** A run's placement as the run spec holds it (`where` + where-specific fields). */
export type Placement = { readonly where: string } & Readonly<Record<string, unknown>>;

export interface ExecutorLane {
  /** For logs and the 422's detail. */
  readonly name: string;
  /** Whether this executor can ever take a run of `kind` at `placement` (busy or offline: still true). */
  accepts(kind: string, placement: Placement): boolean;
}

/** The control plane's own inline executor: analysis runs, placed inline. */
export const INLINE_ANALYSIS: ExecutorLane = {
  name: 'inline-analysis',
  accepts: (kind, p) => kind === 'analysis' && p.where === 'inline',
};

/** The agent bridge: agent runs the agent service executes and reports (/internal/agent-run-events). */
export const AGENT_BRIDGE: ExecutorLane = {
  name: 'agent-bridge',
  accepts: (kind, p) => kind === 'agent' && p.where === 'runtime',
};

/**
 * A runner that declared the kinds it takes (and, optionally, the images): accepts those kinds at any
 * placement but `inline` and `runtime`, restricted to its images when the placement names one.
 */
export function declaredRunner(
  name: string,
  declared: { kinds: readonly string[]; images?: readonly string[] },
): ExecutorLane {
  const kinds = new Set(declared.kinds);
  const images = declared.images ? new Set(declared.images) : null;
  return {
    name,
    accepts: (kind, p) =>
      kinds.has(kind) &&
      p.where !== 'inline' &&
      p.where !== 'runtime' &&
      (images === null || typeof p.image !== 'string' || images.has(p.image)),
  };
}

export class ExecutorRegistry {
  private readonly lanes = new Set<ExecutorLane>();

  constructor(lanes: Iterable<ExecutorLane> = [INLINE_ANALYSIS, AGENT_BRIDGE]) {
    for (const l of lanes) this.lanes.add(l);
  }

  /** Adds an executor; returns the function that removes it. */
  register(lane: ExecutorLane): () => void {
    this.lanes.add(lane);
    return () => {
      this.lanes.delete(lane);
    };
  }

  /** The names of the executors that could take this run (empty: it can never run here). */
  takers(kind: string, placement: Placement): string[] {
    return [...this.lanes].filter((l) => l.accepts(kind, placement)).map((l) => l.name);
  }

  /** Throws 422 `no_placement` (naming kind and placement) when no executor can ever take the run. */
  assertPlaceable(kind: string, placement: Placement): void {
    if (this.takers(kind, placement).length > 0) return;
    throw new ControlPlaneError(
      'no_placement',
      `no executor of this deployment can run a ${kind} run placed ${placement.where}`,
      { kind, placement },
    );
  }
}
