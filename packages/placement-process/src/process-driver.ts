// The process driver: each sandbox is a private workspace directory, a set of cgroups (or rlimits) and a
// label file; each command runs in a fresh bubblewrap sandbox over them (see bwrap-args.ts and
// sandbox-command.ts). The embedded default rung for command, eval and sandbox runs.
import { chownSync, mkdirSync, renameSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  blake3Hex,
  type Capacity,
  type Command,
  type Driver,
  type DriverDescription,
  type ExecOptionsInput,
  type ExecResult,
  type ExecStream,
  environmentOf,
  filesOfArchive,
  LabelSelector,
  LogOptions,
  type LogOptionsInput,
  matchesLabels,
  PlacementError,
  ProvisionSpec,
  type ProvisionSpecInput,
  parseHandle,
  type ReapedSandbox,
  restoreDirectory,
  type SandboxHandle,
  type SandboxUsage,
  type Snapshot,
  type StreamOptionsInput,
  sandboxId,
  WorkspaceDir,
  type WorkspaceFile,
} from '@everdict/placement';
import { describeProcessDriver, PROCESS_DRIVER } from './description.js';
import { heldSandbox, isIdle, type Sandbox } from './held-sandbox.js';
import { resolveImage } from './images.js';
import { detectLimits } from './limits/detect.js';
import type { LimitBackend, SandboxLimits } from './limits/limits.js';
import { ProcessDriverConfig, type ProcessDriverConfigInput } from './process-driver-config.js';
import { ReadyPool, reapScaffolds } from './ready-pool.js';
import { execIn, settled, streamIn } from './run-commands.js';
import { removeSandbox, removeTree } from './sandbox-removal.js';
import { disposeHeld, disposeUnheld, type HeldSandboxes, restoreWorkspace } from './sandbox-restore.js';
import {
  currentOwner,
  ensureLayout,
  hasRecord,
  listRecords,
  ownerAlive,
  readRecord,
  type SandboxRecord,
  type StateLayout,
  workspaceName,
  writeRecord,
} from './sandbox-state.js';
import { Spawner } from './spawner/client.js';
import { snapshotWorkspace } from './workspace-archive.js';
import { makeWorkspaceDirectories } from './workspace-directories.js';
import { archiveDirectory, nothingUnder } from './workspace-files.js';

export { PROCESS_DRIVER } from './description.js';
export type { Sandbox };

export class ProcessDriver implements Driver {
  readonly config: ProcessDriverConfig;
  private readonly backend: LimitBackend;
  private readonly sandboxes = new Map<string, Sandbox>();
  private readonly pending = new Map<string, Promise<Sandbox>>();
  /** What a dispose needs of this driver (sandbox-restore.ts). */
  private readonly holding: HeldSandboxes = { state: () => this.state(), held: this.sandboxes };
  private layout: StateLayout | undefined;
  private stateTag: string | undefined;
  private ready: ReadyPool | undefined;
  private readonly user: { uid: number; gid: number } | null;
  /** Starts bubblewrap for this driver (config `spawner: 'process'`); null: inline spawns. */
  readonly spawner: Spawner | null;

  constructor(input: ProcessDriverConfigInput = {}) {
    this.config = ProcessDriverConfig.parse(input);
    this.backend = detectLimits(this.config.limits, this.config.cgroupParent);
    this.user =
      process.getuid?.() === 0 ? { uid: this.config.sandboxUid, gid: this.config.sandboxGid } : null;
    this.spawner =
      this.config.spawner === 'process'
        ? new Spawner({ program: this.config.spawnerProgram, dir: join(this.config.stateDir, 'bin') })
        : null;
  }

  /**
   * A sandbox's cgroup name: its id plus a tag of the state directory, so two hosts' drivers (or two test
   * runs) on one kernel never share a cgroup even for the same (tenant, run).
   */
  private cgroupName(id: string): string {
    return `${id}-${this.tag()}`;
  }

  private tag(): string {
    this.stateTag ??= blake3Hex(new TextEncoder().encode(resolve(this.config.stateDir))).slice(0, 8);
    return this.stateTag;
  }

  /** The scaffolds made ahead (ready-pool.ts), started on the first provision; null when `readyPool` is 0. */
  private pool(l: StateLayout): ReadyPool | null {
    const size = Math.min(this.config.readyPool, this.config.slots);
    if (size === 0) return null;
    this.ready ??= new ReadyPool({
      size,
      workspaces: l.workspaces,
      backend: this.backend,
      tag: this.tag(),
      user: this.user,
    });
    return this.ready;
  }

  /** Removes the scaffolds made ahead and makes no more (the process's exit does it too). */
  drainReadyPool(): void {
    this.ready?.drainSync();
  }

  describe(): DriverDescription {
    return describeProcessDriver(this.backend.mechanism);
  }

  private async state(): Promise<StateLayout> {
    this.layout ??= await ensureLayout(this.config.stateDir);
    return this.layout;
  }

  async provision(input: ProvisionSpecInput): Promise<SandboxHandle> {
    const spec = ProvisionSpec.parse(input);
    const id = sandboxId('pd', spec.labels);
    const held = this.sandboxes.get(id) ?? (await this.pending.get(id));
    if (held && !held.disposed) return held.record.handle;
    if (held) {
      // Being disposed: its handle is `gone` already. Provisioned afresh once the removal is done.
      await held.removal;
      if (this.sandboxes.get(id) === held)
        throw new PlacementError('gone', `sandbox ${id} is still being removed`, { id });
      return this.provision(input);
    }
    const l = await this.state();
    const existing = hasRecord(l, id) ? await readRecord(l, id) : null;
    if (existing) return (await this.adopt(existing)).record.handle;
    this.claimSlot();
    const making = this.create(id, spec, l);
    this.pending.set(id, making);
    try {
      return (await making).record.handle;
    } finally {
      this.pending.delete(id);
    }
  }

  private async create(id: string, spec: ProvisionSpec, l: StateLayout): Promise<Sandbox> {
    const image = await resolveImage(this.config.imagesDir, spec.image);
    // A scaffold made ahead when one is ready: its workspace and cgroups are this sandbox's, by their paths
    // in the label file (the cgroups' names stay the scaffold's; its workspace is renamed, below).
    const scaffold = this.pool(l)?.take();
    const cgroup = scaffold?.name ?? this.cgroupName(id);
    const createdAtMs = Date.now();
    const handle: SandboxHandle = {
      id,
      driver: PROCESS_DRIVER,
      labels: spec.labels,
      environment: environmentOf(PROCESS_DRIVER, image.ref, image.digest),
      limits: spec.limits,
      network: spec.network,
      createdAtMs,
      deadlineMs: createdAtMs + spec.limits.wallTimeoutMs,
    };
    const record: SandboxRecord = {
      version: 1,
      handle,
      env: spec.env,
      imageRoot: image.kind === 'named' ? image.root : null,
      workspace: join(l.workspaces, workspaceName()),
      log: join(l.logs, `${id}.log`),
      limits: {
        mechanism: this.backend.mechanism,
        paths: this.backend.plan(cgroup, spec.limits),
      },
      owner: currentOwner(),
    };
    writeRecord(l, record);
    try {
      // A scaffold's name tells its owner and how many it made (ready-pool.ts): a command would read it in
      // /proc/self/mountinfo. Renamed after the label file is written, so a crash in between leaves an
      // untaken scaffold, which `reap` removes.
      if (scaffold) renameSync(scaffold.workspace, record.workspace);
      else {
        mkdirSync(record.workspace, { mode: 0o700 });
        if (this.user) chownSync(record.workspace, this.user.uid, this.user.gid);
      }
      const limits = await this.backend.create(cgroup, spec.limits, scaffold?.cgroups);
      const box = this.hold(record, limits, true);
      if (spec.workspace) await restoreDirectory(record.workspace, spec.workspace, this.owner());
      // The spec's directories, made here on the host (no command has run yet): a command needs no `mkdir`
      // of its own, which would be a shell started in the sandbox before it (workspace-directories.ts).
      if (spec.directories.length > 0)
        box.made = makeWorkspaceDirectories(record.workspace, spec.directories, this.user);
      return box;
    } catch (e) {
      if (scaffold) await removeTree(scaffold.workspace); // not renamed: gone with the sandbox
      await removeSandbox(await this.state(), record, this.backend.open(record.limits.paths, spec.limits), {
        leftovers: spec.workspace !== undefined,
      });
      this.sandboxes.delete(id);
      if (e instanceof PlacementError) throw e;
      throw new PlacementError('spawn_failed', `could not set up sandbox ${id}: ${(e as Error).message}`, {
        id,
      });
    }
  }

  /** Refuses (`capacity`) when every slot is taken: by a sandbox held here, made or adopted, or one being made. */
  private claimSlot(): void {
    if (this.sandboxes.size + this.pending.size >= this.config.slots) {
      throw new PlacementError('capacity', `all ${this.config.slots} process sandbox slots are taken`, {
        slots: this.config.slots,
      });
    }
  }

  private owner() {
    return this.user ? { owner: this.user } : {};
  }

  private hold(record: SandboxRecord, limits: SandboxLimits, created = false): Sandbox {
    const box = heldSandbox(record, limits, this.config.logCapBytes, created);
    this.sandboxes.set(record.handle.id, box);
    return box;
  }

  /**
   * Takes over a sandbox another instance (or a crashed process) left: this process becomes its owner. It
   * takes a slot like one made here; with none free it is refused (`capacity`) and the label file is left as
   * it was (the other owner's).
   */
  private async adopt(record: SandboxRecord): Promise<Sandbox> {
    const l = await this.state();
    const held = this.sandboxes.get(record.handle.id);
    if (held && !held.disposed) return held; // adopted meanwhile by a call beside this one
    this.claimSlot();
    const owned: SandboxRecord = { ...record, owner: currentOwner() };
    writeRecord(l, owned);
    return this.hold(owned, this.backend.open(record.limits.paths, record.handle.limits));
  }

  /**
   * The very handle this driver gave out (provision answers `record.handle`) for a sandbox it still holds: it
   * was valid when made, so it is not parsed again (zod). Anything else is parsed at the boundary by the caller.
   */
  private ownHandle(input: SandboxHandle): SandboxHandle | undefined {
    const given = this.sandboxes.get((input as { id?: unknown })?.id as string);
    return given?.record.handle === input ? given.record.handle : undefined;
  }

  /** The sandbox behind a handle: held here, or adopted from its label file; `gone` otherwise. */
  async sandbox(input: SandboxHandle): Promise<Sandbox> {
    const handle = this.ownHandle(input) ?? parseHandle(input);
    const held = this.sandboxes.get(handle.id);
    const l = await this.state();
    if (held && !held.disposed) {
      if (hasRecord(l, handle.id)) return held;
      await disposeHeld(this.holding, held); // another instance disposed (or reaped) it: what is left here goes too
      throw new PlacementError('gone', `sandbox ${handle.id} was removed by another driver instance`, {
        id: handle.id,
      });
    }
    const record = held ? null : await readRecord(l, handle.id);
    if (!record) throw new PlacementError('gone', `sandbox ${handle.id} does not exist`, { id: handle.id });
    return this.adopt(record);
  }

  /**
   * Bubblewrap could not be moved back out of a sandbox's cgroups (SpawnRequest.leave): the command ran, with
   * bubblewrap counted in the sandbox's cgroups. The same cause (this host's cgroup layout) holds for every
   * command, so the host hears it once per driver.
   */
  private readonly warnLeave = (detail: string): void => {
    if (this.leaveWarned) return;
    this.leaveWarned = true;
    const message =
      "bubblewrap could not be moved back out of a sandbox's cgroups, so it stays there until its command " +
      `ends (its memory and its pid count against the sandbox's limits); reported once per driver: ${detail}`;
    if (this.config.onWarning) this.config.onWarning({ code: 'cgroup_leave_failed', message });
    else process.emitWarning(message, { code: 'EVERDICT_CGROUP_LEAVE_FAILED' });
  };
  private leaveWarned = false;

  private setup(box: Sandbox) {
    return {
      bwrap: this.config.bwrap,
      args: box.args,
      limits: box.limits,
      user: this.user,
      cpuTimeMs: box.record.handle.limits.cpuTimeMs,
      pollMs: this.config.cpuPollMs,
      spawner: this.spawner,
      warm: this.backend.warm,
      warn: this.warnLeave,
    };
  }

  async exec(handle: SandboxHandle, cmd: Command, options: ExecOptionsInput = {}): Promise<ExecResult> {
    const box = await this.sandbox(handle);
    return execIn(box, this.setup(box), cmd, options);
  }

  async stream(handle: SandboxHandle, cmd: Command, options: StreamOptionsInput = {}): Promise<ExecStream> {
    const box = await this.sandbox(handle);
    return streamIn(box, this.setup(box), cmd, options);
  }

  async *logs(handle: SandboxHandle, input: LogOptionsInput = {}): AsyncGenerator<Uint8Array> {
    const opts = LogOptions.parse(input);
    const box = await this.sandbox(handle);
    yield* box.log.read(opts.follow, opts.signal);
  }

  async snapshot(handle: SandboxHandle): Promise<Snapshot> {
    const box = await this.sandbox(handle);
    return snapshotWorkspace(
      { bwrap: this.config.bwrap, user: this.user, capBytes: this.config.snapshotCapBytes },
      box.record.workspace,
      await isIdle(box),
    );
  }

  async *files(handle: SandboxHandle, dir: string): AsyncGenerator<WorkspaceFile> {
    const path = WorkspaceDir.parse(dir);
    const box = await this.sandbox(handle);
    if (nothingUnder(box.record.workspace, path, this.user, await isIdle(box))) return;
    const setup = { bwrap: this.config.bwrap, user: this.user };
    yield* filesOfArchive(archiveDirectory(setup, box.record.workspace, path));
  }

  async restore(handle: SandboxHandle, snapshot: Snapshot): Promise<void> {
    const box = await this.sandbox(handle);
    await restoreWorkspace(box, snapshot, this.owner());
  }

  async usage(handle: SandboxHandle): Promise<SandboxUsage> {
    const box = await this.sandbox(handle);
    await settled(box); // what ended commands left behind is still being charged: final once gone
    const measured = await box.limits.usage();
    return {
      ...measured,
      wallTimeMs: Math.max(0, Date.now() - box.record.handle.createdAtMs),
      mechanism: box.limits.mechanism,
    };
  }

  async dispose(input: SandboxHandle): Promise<void> {
    const handle = this.ownHandle(input) ?? parseHandle(input);
    const held = this.sandboxes.get(handle.id);
    if (held) await disposeHeld(this.holding, held);
    else await disposeUnheld(await this.state(), handle.id, this.backend);
  }

  async reap(selector: { labels: LabelSelector }): Promise<ReapedSandbox[]> {
    const wanted = LabelSelector.parse(selector.labels);
    const out: ReapedSandbox[] = [];
    const records = await listRecords(await this.state());
    // Scaffolds a dead owner made ahead and no sandbox took: no tenant's, removed whatever the selector.
    const taken = new Set(records.map((r) => r.workspace));
    await reapScaffolds(this.backend, (await this.state()).workspaces, taken);
    for (const record of records) {
      const { id, labels } = record.handle;
      if (!matchesLabels(labels, wanted)) continue;
      if (this.sandboxes.has(id) || this.pending.has(id) || ownerAlive(record.owner)) continue;
      const limits = this.backend.open(record.limits.paths, record.handle.limits);
      const removed = await removeSandbox(await this.state(), record, limits, { leftovers: true });
      out.push({ id, labels, removed });
    }
    return out;
  }

  async capacity(): Promise<Capacity> {
    const used = this.sandboxes.size + this.pending.size;
    return {
      slotsTotal: this.config.slots,
      slotsFree: Math.max(0, this.config.slots - used),
      mechanism: this.backend.mechanism,
    };
  }
}
