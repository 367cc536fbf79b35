// One lease, executed: provision a sandbox through the driver, run the command (or the harness), stream
// its output and trace into the journal, measure the energy, upload out/ as artifacts, seal the interval as
// a signed `sandbox.attestation/1` and complete. An aborted interval (lost lease, cancel, kill) kills its
// compute and reports nothing: no attestation is made for an interval nobody finished — the abort also cuts
// its artifact upload and its wait for the completion batch. A command the driver stopped at a limit (its
// `timeout`, `oom`, `pids_exhausted`, `output_capped`), or whose program could not start, ended there, as
// observed: a failed interval naming it (command-end.ts).
//
// Two phases: the compute (provision → the command → its outputs, usage and energy read) and the settle
// behind it (artifacts, dispose, the signed completion and its answer). `hooks.computed` marks the line
// between them: the daemon's slot is the compute, so it takes its next lease there, while this interval's
// lease is still held until the completion settles it.
import type { Driver, ExecStream, SandboxHandle } from '@everdict/placement';
import { isPlacementError, utf8 } from '@everdict/placement';
import type { Usage } from '@everdict/run-model';
import { encodeAttestationBody, type SigningKey } from '@everdict/runrecord';
import { AuditChain } from './audit-chain.js';
import { commandEnd, stoppedBeforeStart, stopSummary } from './command-end.js';
import { Completions, MAX_BATCH, type NextLeases } from './completions.js';
import type { EnergyMeter } from './energy.js';
import { RunnerError } from './errors.js';
import { expiryLimits } from './expiry.js';
import { Journal, type JournalOptions } from './journal.js';
import { pumpOutput, Tail } from './output.js';
import type { RunnerApi } from './port.js';
import { CommandSubject, type CompleteBody, EvalSubject, type Lease } from './protocol.js';
import { attestationSigner } from './signer.js';
import { type OutUploads, readHarnessResults, uploadOut } from './workspace-files.js';

export interface IntervalDeps {
  readonly api: RunnerApi;
  readonly driver: Driver;
  readonly key: SigningKey;
  readonly meter: () => EnergyMeter;
  readonly journal?: JournalOptions;
  /** Report "accounted, no calls" for sandboxes without network (see README). Default true. */
  readonly accountNoNetwork?: boolean;
  /** The key's audit chain (audit-chain.ts); absent → one in-memory chain per process. */
  readonly audit?: AuditChain;
  /** Who takes the leases granted with a completion batch (the daemon); absent → none are asked for. */
  readonly next?: NextLeases;
  /** out/'s small files uploaded at once (`uploadOut`); default `UPLOADS_IN_FLIGHT`, 1 sends one at a time. */
  readonly uploadsInFlight?: number;
}

/** Chains of keys given no `audit` (one per key, in memory). */
const unsaved = new Map<string, AuditChain>();
const chainOf = (deps: IntervalDeps): AuditChain => {
  if (deps.audit) return deps.audit;
  const known = unsaved.get(deps.key.publicKey);
  if (known) return known;
  const chain = new AuditChain();
  unsaved.set(deps.key.publicKey, chain);
  return chain;
};
/** One completion queue per chain (it delivers the chain's links in order). */
const queues = new WeakMap<AuditChain, Completions>();
const completionsOf = (deps: IntervalDeps): Completions => {
  const chain = chainOf(deps);
  let queue = queues.get(chain);
  if (!queue) {
    queue = new Completions(deps.api, chain, MAX_BATCH, deps.next);
    queues.set(chain, queue);
  }
  return queue;
};

export type IntervalEnd = 'completed' | 'aborted';

/** Who is told where an interval's compute ends (the daemon: its slot frees there). */
export interface IntervalHooks {
  /**
   * The command has exited and its outputs, usage and energy are read: nothing of this interval runs in
   * its sandbox any more (the sandbox itself is still there while out/ is read for artifacts, then disposed).
   * Called at most once; not at all for an interval that ends before (aborted, failed).
   */
  computed?(): void;
  /**
   * The interval starts uploading files of out/ (an upload may take long: until its completion is queued,
   * no batch is on its way for it). Called at most once, after `computed`, only when out/ has files.
   */
  uploading?(): void;
  /**
   * The interval's completion is handed to the completion queue (its sandbox gone): a batch carrying it is
   * on its way. Called at most once, after `computed`.
   */
  completing?(): void;
}

/** Milliseconds each step of an interval took (filled as it goes; for the daemon's log and the bench). */
export type IntervalSteps = Partial<
  Record<'provision' | 'command' | 'outputs' | 'artifacts' | 'usage' | 'complete' | 'dispose', number>
>;

interface Plan {
  readonly image: string;
  readonly argv: string[];
  readonly eval?: { caseFile: string };
}

function planOf(lease: Lease): Plan {
  if (lease.kind === 'command') {
    const s = CommandSubject.safeParse(lease.spec.subject);
    if (!s.success) throw new RunnerError('bad_lease', `command subject: ${s.error.message}`);
    return { image: s.data.image ?? 'default', argv: s.data.command };
  }
  if (lease.kind === 'eval') {
    const s = EvalSubject.safeParse(lease.spec.subject);
    if (!s.success) throw new RunnerError('bad_lease', `eval subject: ${s.error.message}`);
    if (!lease.harness) throw new RunnerError('bad_lease', 'an eval lease carries its resolved harness');
    const caseFile = JSON.stringify({
      runId: lease.runId,
      caseId: s.data.caseId,
      caseSpec: s.data.caseSpec ?? {},
    });
    return { image: lease.harness.image, argv: lease.harness.command, eval: { caseFile } };
  }
  throw new RunnerError('bad_lease', `this runner does not execute ${lease.kind} runs`);
}

const aborted = (signal: AbortSignal) => signal.aborted;
const networkOf = (lease: Lease): 'none' | 'granted' => lease.grants.network;

export async function executeInterval(
  lease: Lease,
  deps: IntervalDeps,
  signal: AbortSignal,
  steps: IntervalSteps = {},
  hooks: IntervalHooks = {},
): Promise<IntervalEnd> {
  const plan = planOf(lease);
  const startedMs = Date.now();
  let mark = performance.now();
  const step = (name: keyof IntervalSteps) => {
    const now = performance.now();
    steps[name] = Math.round((now - mark) * 10) / 10;
    mark = now;
  };
  const meter = deps.meter();
  await meter.begin();
  const journal = await Journal.open(deps.api, lease.runId, lease.epoch, {
    ...deps.journal,
    seqFrom: lease.seqFrom,
  });
  let handle: SandboxHandle | undefined;
  let kill: (() => void) | undefined;
  const onAbort = () => kill?.();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const expiry = expiryLimits(lease, Date.now());
    const spec = {
      image: plan.image,
      // No network unless the run's grants say so (the process driver: --unshare-net, only `lo`).
      network: networkOf(lease),
      labels: { tenant: lease.tenant, runId: lease.runId, kind: lease.kind as 'command' },
      // `out/` made by the driver before the handle is returned (on the host for the process driver): the
      // command needs no `mkdir -p out` shell of its own started before it in the sandbox.
      directories: ['out'],
      // The run's expiry (--ttl) is the sandbox's wall deadline: the driver stops the command there (expiry.ts).
      ...(expiry ? { limits: expiry } : {}),
    };
    const provisionedFrom = Date.now();
    handle = await deps.driver.provision(spec);
    // A provision for the same (tenant, run) answers the sandbox already there: an earlier attempt's, left
    // when its runner was killed (its workspace, its first spec, on Kubernetes maybe its command still
    // running). This attempt runs in a sandbox of its own: that one is disposed and a new one provisioned.
    if (handle.createdAtMs < provisionedFrom) {
      await deps.driver.dispose(handle);
      handle = undefined;
      handle = await deps.driver.provision(spec);
    }
    step('provision');
    if (aborted(signal)) return end();
    let stream: ExecStream;
    try {
      // An eval run's workspace gets case.json first; `out/` is there already (the spec's `directories`).
      if (plan.eval) {
        const prep = await deps.driver.exec(handle, ['sh', '-c', 'cat > case.json'], {
          stdin: plan.eval.caseFile,
          timeoutMs: 60_000,
        });
        if (prep.exitCode !== 0)
          throw new RunnerError('bad_state', `could not prepare the workspace: ${utf8(prep.stderr)}`);
      }
      stream = await deps.driver.stream(handle, plan.argv);
    } catch (err) {
      // The sandbox's deadline (the run's expiry) passed before the command started: stopped there.
      if (!isPlacementError(err, 'timeout')) throw err;
      stream = stoppedBeforeStart(err);
    }
    kill = () => stream.kill();
    if (aborted(signal)) stream.kill();
    stream.stdin.end();
    const tails = { stdout: new Tail(), stderr: new Tail() };
    const [, , ended] = await Promise.all([
      pumpOutput(stream.stdout, 'stdout', journal, tails.stdout),
      pumpOutput(stream.stderr, 'stderr', journal, tails.stderr),
      commandEnd(stream.exit),
    ]);
    step('command');
    if (aborted(signal)) return end();
    // The exit code the driver observed: the one the attestation signs. What a harness reports of its case
    // (out/outputs.json's `exitCode`) is an output, never signed as the interval's exit.
    const exitCode = ended.exitCode;
    let reported = exitCode;
    /** The interval failed on what it observed besides the exit (a limit, the harness's out/ files). */
    let failed = false;
    // Stopped at a limit, or its program not found or not executable: the command's end, observed — named in
    // the trajectory and the summary, and the interval completes failed (not a lost executor, its lease left
    // to expire and the run re-run to the same end on every attempt).
    const stop = ended.stop;
    if (stop) {
      failed = true;
      await journal.append({ type: 'error', message: stop.message, code: stop.code, fatal: true });
    }

    const outputs: CompleteBody['outputs'] = {};
    /** The model calls an eval harness's trace reported (readHarnessResults), beside the sandbox's CPU time. */
    let traced: Usage | undefined;
    if (stop) outputs.summary = stopSummary(stop, lease);
    if (!plan.eval) {
      outputs.result = {
        stdout: tails.stdout.text(),
        stderr: tails.stderr.text(),
        truncated: tails.stdout.truncated || tails.stderr.truncated,
      };
    } else if (!stop) {
      // (A harness stopped at a limit did not finish: its out/ files are not read as its outputs.)
      const read = await readHarnessResults(deps.driver, handle, journal);
      traced = read.usage;
      if (read.outputs) {
        if (read.outputs.summary !== undefined) outputs.summary = read.outputs.summary;
        if (read.outputs.result !== undefined) outputs.result = read.outputs.result;
        if (read.outputs.exitCode !== undefined) reported = read.outputs.exitCode;
      }
      if (read.problem) {
        await journal.append({ type: 'error', message: read.problem, code: 'bad_harness_output' });
        outputs.summary = read.problem;
        failed = true;
        if (reported === 0) reported = 1;
      }
      if (reported !== 0) failed = true;
    }
    outputs.exitCode = reported;
    step('outputs');
    const usage = await deps.driver.usage(handle).catch(() => null);
    step('usage');
    const endedMs = Date.now();
    const energy = await meter.end(usage?.cpuTimeMs ?? null, endedMs - startedMs);
    // The compute is done: the daemon's slot takes its next lease now, and what follows — reading out/ and
    // the uploads, the dispose, the completion's round trip — runs behind it.
    hooks.computed?.();
    if (aborted(signal)) return end();
    const uploaded = await uploadOut(deps, lease, handle, hooks, signal, journal).catch(
      (err: unknown): OutUploads => {
        if (aborted(signal)) return { artifacts: [] }; // an upload the abort cut: the interval ends aborted below
        throw err;
      },
    );
    step('artifacts');
    if (aborted(signal)) return end();
    if (uploaded.artifacts.length > 0) outputs.artifacts = uploaded.artifacts;
    if (uploaded.unreadable) {
      // The sandbox's out/ could not be read whole (a file its user cannot read): the run's outputs are not
      // all there, so the interval fails — and says why — rather than being re-run to the same end.
      failed = true;
      await journal.append({ type: 'error', code: 'artifacts_unreadable', message: uploaded.unreadable });
      outputs.summary ??= `out/ could not be read: ${uploaded.unreadable}`;
    }
    const outcome = exitCode === 0 && !failed ? 'succeeded' : 'failed';

    const journalRoot = await journal.close();
    // The sandbox goes before the completion (its lease is held until the completion settles it, so the
    // driver holds no more sandboxes than the runner holds leases: the daemon's `leaseBound`).
    const disposing = handle;
    handle = undefined;
    await deps.driver.dispose(disposing).catch(() => {});
    step('dispose');
    // One link of the key's audit chain (audit-chain.ts): audit_prev = the attestation signed before,
    // delivered in order with whatever else finished meanwhile (completions.ts).
    hooks.completing?.();
    // An abort meanwhile stops the wait (the batch goes on without this interval: its answer is the queue's).
    const delivered = await unlessAborted(
      signal,
      completionsOf(deps).submit({
        runId: lease.runId,
        sign: (auditPrev) => {
          if (aborted(signal)) return null;
          const { body, address } = attestationSigner(deps.key)({
            unitId: lease.unitId,
            grantsId: lease.grantsId,
            recordHead: lease.recordHead,
            startedMs: BigInt(startedMs),
            endedMs: BigInt(endedMs),
            activeUj: energy.activeUj,
            provenance: energy.provenance,
            meter: energy.meter,
            journalRoot,
            outcome,
            exitCode,
            ...(auditPrev === undefined ? {} : { auditPrev }),
          });
          const complete: CompleteBody = {
            epoch: lease.epoch,
            outputs,
            attestation: encodeAttestationBody(body) as unknown as Record<string, unknown>,
            ...usageReport(usage?.cpuTimeMs, traced),
            // "Accounted, no calls" only where the runner itself built a sandbox with no way out (README).
            ...(deps.accountNoNetwork !== false && networkOf(lease) === 'none'
              ? { account: { dispatched: [], resolved: [] } }
              : {}),
          };
          return { address, body: complete };
        },
      }),
    );
    step('complete');
    if (!delivered) return end();
    return 'completed';
  } finally {
    signal.removeEventListener('abort', onAbort);
    journal.abandon();
    if (handle) {
      await deps.driver.dispose(handle).catch(() => {});
      step('dispose');
    }
  }

  function end(): IntervalEnd {
    journal.abandon();
    return 'aborted';
  }
}

/**
 * What the completion reports the run used: the sandbox's CPU time where the driver read it, and an eval
 * harness's model calls where its trace reported them — each only where observed, nothing otherwise.
 */
function usageReport(
  cpuTimeMs: number | null | undefined,
  traced: Usage | undefined,
): Pick<CompleteBody, 'usage'> {
  const usage: Record<string, number> = { ...(cpuTimeMs != null ? { cpuTimeMs } : {}), ...traced };
  return Object.keys(usage).length > 0 ? { usage } : {};
}

/** `work`'s answer — or false as soon as `signal` aborts (the work goes on, its answer no longer awaited). */
function unlessAborted(signal: AbortSignal, work: Promise<boolean>): Promise<boolean> {
  return new Promise<boolean>((resolve, reject) => {
    const stop = () => resolve(false);
    signal.addEventListener('abort', stop, { once: true });
    if (signal.aborted) stop();
    work.then(
      (v) => {
        signal.removeEventListener('abort', stop);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', stop);
        reject(err);
      },
    );
  });
}
