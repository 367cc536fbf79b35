// The witness's own Prometheus metrics (prom-client, its own registry): forks above all.
import { Counter, Gauge, Registry } from 'prom-client';

export class WitnessMetrics {
  readonly registry = new Registry();
  readonly forks = new Counter({
    name: 'everdict_witness_fork_total',
    help: 'Tree heads that do not extend the last accepted one (a smaller tree, another root, a failed consistency proof, another key)',
    labelNames: ['log'] as const,
    registers: [this.registry],
  });
  readonly accepted = new Counter({
    name: 'everdict_witness_accepted_total',
    help: 'Tree heads accepted and cosigned',
    labelNames: ['log'] as const,
    registers: [this.registry],
  });
  readonly rejected = new Counter({
    name: 'everdict_witness_rejected_total',
    help: 'Tree heads not accepted without a proven fork (bad signature, malformed proof)',
    labelNames: ['log', 'code'] as const,
    registers: [this.registry],
  });
  readonly pollErrors = new Counter({
    name: 'everdict_witness_poll_errors_total',
    help: 'Polls whose log did not answer the wire contract',
    labelNames: ['log'] as const,
    registers: [this.registry],
  });
  readonly treeSize = new Gauge({
    name: 'everdict_witness_accepted_tree_size',
    help: 'Size of the last accepted tree',
    labelNames: ['log'] as const,
    registers: [this.registry],
  });
}
