// The placement ladder on run-model's `placement` field: which rung a run's placement selects, and the
// placement each rung serves. Placement is a field, not a kind: the same run moves up the ladder.
import type { Placement } from '@everdict/run-model';

export type Rung = 'inline' | 'process' | 'kubernetes';

/** inline = {where:"inline"}; process = {where:"driver", isolation:"process"}; kubernetes = {where:"runtime", isolation:"container", target}. */
export function placementOf(rung: Rung, target?: string): Placement {
  switch (rung) {
    case 'inline':
      return { where: 'inline' };
    case 'process':
      return { where: 'driver', isolation: 'process' };
    case 'kubernetes':
      return target === undefined
        ? { where: 'runtime', isolation: 'container' }
        : { where: 'runtime', isolation: 'container', target };
  }
}

/**
 * The rung a placement selects, or null when no rung here serves it (a caller answers `no_placement`).
 * An absent isolation means the rung's own (inline: none, driver: process, runtime: container); any other
 * isolation (a driver-owned container, a VM) is not served by these drivers. `target` names the runner
 * or cluster of a runtime placement and does not change the rung.
 */
export function rungFor(placement: Placement): Rung | null {
  const iso = placement.isolation;
  switch (placement.where) {
    case 'inline':
      return iso === undefined || iso === 'none' ? 'inline' : null;
    case 'driver':
      return iso === undefined || iso === 'process' ? 'process' : null;
    case 'runtime':
      return iso === undefined || iso === 'container' ? 'kubernetes' : null;
  }
}
