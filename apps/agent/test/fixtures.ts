// Test fixtures: a fresh directory per test with a trajectory store and a local control plane over it.
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { localBackend, TrajectoryStore } from '@everdict/trajectory-store';
import type { AgentSpecInput } from '../src/agent-spec.js';
import { LocalControlPlane, type LocalControlPlaneOptions } from '../src/local/local-control-plane.js';

export function freshDir(): string {
  return mkdtempSync(path.join(os.tmpdir(), 'everdict-agent-test-'));
}

export function storeAt(dir: string): TrajectoryStore {
  return new TrajectoryStore({ backend: localBackend({ root: path.join(dir, 'trajectories') }) });
}

export async function localSetup(
  agent: Partial<AgentSpecInput> = {},
  options: Partial<LocalControlPlaneOptions> = {},
): Promise<{ dir: string; store: TrajectoryStore; cp: LocalControlPlane; agent: AgentSpecInput }> {
  const dir = options.dir ?? freshDir();
  const store = storeAt(dir);
  const cp = new LocalControlPlane({ dir, store, ...options });
  await cp.configureTenant('acme', { budget: { usd: 100 } });
  const spec: AgentSpecInput = {
    id: 'releaser',
    version: '1',
    name: 'releaser',
    model: 'scripted-test',
    systemPrompt: 'You ship releases and ask before you do.',
    tools: ['ask_approval', 'read_run', 'run_command', 'start_experiment'],
    envelope: { usd: 5, runs: 5 },
    pricing: { inputUsdPerMTok: 3, outputUsdPerMTok: 15 },
    ...agent,
  };
  await cp.putAgent('acme', spec);
  return { dir, store, cp, agent: spec };
}
