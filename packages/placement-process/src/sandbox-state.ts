// Label files: one JSON file per sandbox under <stateDir>/sandboxes/, written before anything else of the
// sandbox exists and removed after everything else is gone, so `reap` finds every leftover of a crash by
// reading this one directory. Each names the sandbox's labels, workspace, log, cgroups and owner process.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Env, LimitMechanism, SandboxHandle } from '@everdict/placement';
import { z } from 'zod';

export const Owner = z.strictObject({ pid: z.int().positive(), startTime: z.string() });
export type Owner = z.infer<typeof Owner>;

export const SandboxRecord = z.strictObject({
  version: z.literal(1),
  handle: SandboxHandle,
  env: Env,
  /** The image's root directory (named images) or null (`default`). */
  imageRoot: z.string().nullable(),
  workspace: z.string(),
  log: z.string(),
  limits: z.strictObject({ mechanism: LimitMechanism, paths: z.array(z.string()) }),
  owner: Owner,
});
export type SandboxRecord = z.infer<typeof SandboxRecord>;

export interface StateLayout {
  readonly sandboxes: string;
  readonly workspaces: string;
  readonly logs: string;
}

export function layout(stateDir: string): StateLayout {
  return {
    sandboxes: join(stateDir, 'sandboxes'),
    workspaces: join(stateDir, 'workspaces'),
    logs: join(stateDir, 'logs'),
  };
}

/**
 * A new sandbox's workspace directory name: random, a new one for each sandbox. A command sees its host path
 * in /proc/self/mountinfo (the bind mount's root, README), so the name says nothing of the sandbox's tenant
 * or run (its id is a hash of both, the same for every provision of the run) nor of the driver's process.
 */
export function workspaceName(): string {
  return `ws-${randomBytes(12).toString('hex')}`;
}

/** Makes the state directories; the path down to a workspace must be searchable by the sandbox user (0711). */
export async function ensureLayout(stateDir: string): Promise<StateLayout> {
  const l = layout(stateDir);
  await mkdir(stateDir, { recursive: true, mode: 0o711 });
  await mkdir(l.sandboxes, { recursive: true, mode: 0o700 });
  await mkdir(l.workspaces, { recursive: true, mode: 0o711 });
  await mkdir(l.logs, { recursive: true, mode: 0o700 });
  await chmod(stateDir, 0o711);
  await chmod(l.workspaces, 0o711);
  return l;
}

const labelFile = (l: StateLayout, id: string) => join(l.sandboxes, `${id}.json`);

/** Writes a label file atomically (a reader sees the old or the new one, never half of one). */
export function writeRecord(l: StateLayout, record: SandboxRecord): void {
  const path = labelFile(l, record.handle.id);
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(record), { mode: 0o600 });
  renameSync(tmp, path);
}

export function hasRecord(l: StateLayout, id: string): boolean {
  return existsSync(labelFile(l, id));
}

export async function readRecord(l: StateLayout, id: string): Promise<SandboxRecord | null> {
  let text: string;
  try {
    text = await readFile(labelFile(l, id), 'utf8');
  } catch {
    return null;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return null; // not JSON (empty, or cut short by a crash): unreadable, as a file that does not parse
  }
  const parsed = SandboxRecord.safeParse(json);
  return parsed.success ? parsed.data : null;
}

export function removeRecord(l: StateLayout, id: string): boolean {
  try {
    unlinkSync(labelFile(l, id));
    return true;
  } catch {
    return false;
  }
}

/** Every readable label file (a half-written `.tmp` or an unparsable file is skipped). */
export async function listRecords(l: StateLayout): Promise<SandboxRecord[]> {
  let names: string[];
  try {
    names = await readdir(l.sandboxes);
  } catch {
    return [];
  }
  const out: SandboxRecord[] = [];
  for (const name of names) {
    if (!name.endsWith('.json')) continue;
    const r = await readRecord(l, name.slice(0, -'.json'.length));
    if (r) out.push(r);
  }
  return out;
}

/** A process's start time (clock ticks since boot, /proc/<pid>/stat field 22): with the pid, it names one process. */
export function startTimeOf(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

/** This process as an owner: its pid and start time never change, so /proc is read once per process. */
let self: Owner | undefined;
export function currentOwner(): Owner {
  if (self?.pid !== process.pid) self = { pid: process.pid, startTime: startTimeOf(process.pid) ?? '0' };
  return { ...self };
}

/** True while the process that owns a sandbox is still running (the same process, not a reused pid). */
export function ownerAlive(owner: Owner): boolean {
  return startTimeOf(owner.pid) === owner.startTime;
}
