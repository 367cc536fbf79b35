// The local control plane's state: one JSON document in a directory, read fresh on every call and written
// whole through a temporary name + rename (a reader never sees half a write). One writer at a time: this is
// the local demo's and the tests' seat of the ControlPlane port, not a database.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { AgentSpec } from '../agent-spec.js';
import { Resolution } from '../control-plane.js';

export const TurnRow = z.strictObject({
  runId: z.string(),
  tenant: z.string(),
  agentId: z.string(),
  status: z.enum(['queued', 'running', 'awaiting_input', 'succeeded', 'failed', 'cancelled']),
  epoch: z.int().nonnegative(),
  holder: z.string().optional(),
  leaseExpiresAt: z.number().optional(),
  unitId: z.string(),
  grantsId: z.string(),
  record: z.unknown().nullable(),
  parkedAtMs: z.int().nonnegative().optional(),
  input: z.strictObject({ text: z.string() }).optional(),
  /** Dispatched calls by id: which tool, and the caused run a run call made. */
  calls: z.record(z.string(), z.strictObject({ tool: z.string(), causedRunId: z.string().optional() })),
  outstanding: z.array(z.string()),
  resolutions: z.array(Resolution),
  outputs: z.strictObject({ summary: z.string().optional() }).optional(),
  usage: z
    .strictObject({
      inputTokens: z.number(),
      outputTokens: z.number(),
      costUsd: z.number(),
      llmCalls: z.number(),
    })
    .optional(),
  error: z.strictObject({ code: z.string(), message: z.string() }).optional(),
});
export type TurnRow = z.infer<typeof TurnRow>;

export const CausedRunRow = z.strictObject({
  runId: z.string(),
  tenant: z.string(),
  kind: z.string(),
  causedBy: z.string(),
  callId: z.string(),
  spec: z.json(),
  status: z.enum(['queued', 'succeeded', 'failed', 'cancelled']),
  outputs: z.json().optional(),
});
export type CausedRunRow = z.infer<typeof CausedRunRow>;

export const Ledger = z.strictObject({
  agents: z.record(z.string(), z.strictObject({ tenant: z.string(), spec: AgentSpec })),
  turns: z.record(z.string(), TurnRow),
  runs: z.record(z.string(), CausedRunRow),
  nextId: z.int().nonnegative(),
});
export type Ledger = z.infer<typeof Ledger>;

const EMPTY: Ledger = { agents: {}, turns: {}, runs: {}, nextId: 1 };

export class LedgerFile {
  readonly file: string;

  constructor(dir: string) {
    mkdirSync(dir, { recursive: true });
    this.file = path.join(dir, 'ledger.json');
  }

  read(): Ledger {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return structuredClone(EMPTY);
      throw e;
    }
    return Ledger.parse(JSON.parse(text));
  }

  /** Read, change, write back; what `change` returns is returned. A throw leaves the file as it was. */
  update<T>(change: (ledger: Ledger) => T): T {
    const ledger = this.read();
    const out = change(ledger);
    const tmp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(ledger));
    renameSync(tmp, this.file);
    return out;
  }
}
