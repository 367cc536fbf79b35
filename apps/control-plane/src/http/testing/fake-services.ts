// An in-memory ControlPlaneServices that keeps the contract's promises (tenant scoping → 404, admin-only
// key management, 402/429 refusals with a rule, cascading cancel, an outbox with a live feed). Tests of
// the HTTP edge use it where the ledger itself is not the point; route tests use the real core.

import { tenantPolicy } from '@everdict/admission';
import { EMPTY_USAGE, Run, type RunStatus } from '@everdict/run-model';
import { ControlPlaneError } from '../../errors.js';
import type { RunView } from '../../ledger/views.js';
import type { ControlPlaneServices } from '../../services/api.js';
import type { CoreObserver } from '../../services/options.js';
import {
  AgentRunEventInput,
  type ApiKeyView,
  CreateKeyInput,
  CreateRunInput,
  CreateSubscriptionInput,
  type EventView,
  type Principal,
  type SubscriptionView,
} from '../../services/types.js';
import { fakeGroups, TERMINAL } from './fake-groups.js';

export interface FakeOptions {
  readonly bootstrapKey: string;
  /** Queued runs per tenant before 429 `tenant.queue_depth`. */
  readonly maxQueued?: number;
  /** Admission outcomes are reported here, as the real core reports them to its metrics observer. */
  readonly observe?: Pick<CoreObserver, 'admission'>;
}

export function fakeServices(opts: FakeOptions): ControlPlaneServices & {
  emit(tenantId: string, runId: string, kind: string, data?: EventView['data']): void;
} {
  let seq = 0;
  const id = (prefix: string) => `${prefix}_${String(++seq).padStart(8, '0')}`;
  const now = () => new Date().toISOString();
  const keys = new Map<string, ApiKeyView & { secret: string }>();
  const runs = new Map<string, RunView>();
  const subs = new Map<string, SubscriptionView>();
  const policies = new Map<string, ReturnType<typeof tenantPolicy>>();
  const events: EventView[] = [];
  const listeners = new Set<(e: EventView) => void>();
  const maxQueued = opts.maxQueued ?? 1000;
  keys.set('key_boot', {
    id: 'key_boot',
    tenantId: 'default',
    role: 'admin',
    label: 'bootstrap',
    createdAt: now(),
    revokedAt: null,
    secret: opts.bootstrapKey,
  });

  const emit = (tenant: string, runId: string | undefined, kind: string, data: EventView['data'] = {}) => {
    const e: EventView = {
      id: String(events.length + 1),
      tenant,
      kind,
      at: now(),
      ...(runId ? { runId } : {}),
      data,
    };
    events.push(e);
    for (const l of listeners) l(e);
  };
  const tenantOf = (v: object): unknown =>
    'tenant' in v ? v.tenant : 'tenantId' in v ? v.tenantId : undefined;
  const own = <T extends object>(map: Map<string, T>, p: Principal, key: string, what: string): T => {
    const v = map.get(key);
    if (!v || tenantOf(v) !== p.tenantId)
      throw new ControlPlaneError('not_found', `${what} ${key} not found`, { id: key });
    return v;
  };
  const admin = (p: Principal) => {
    if (p.role !== 'admin') throw new ControlPlaneError('forbidden', 'admin only');
  };
  const newKey = (tenantId: string, role: 'member' | 'admin', label: string) => {
    const k = {
      id: id('key'),
      tenantId,
      role,
      label,
      createdAt: now(),
      revokedAt: null,
      secret: `evd_fake_${id('s')}_secret`,
    };
    keys.set(k.id, k);
    const { secret, ...view } = k;
    return { ...view, key: secret };
  };
  const createRun = (p: Principal, raw: unknown, causedByRunId?: string, groupId?: string): RunView => {
    const input = CreateRunInput.parse(raw);
    const causer = causedByRunId ? own(runs, p, causedByRunId, 'run') : undefined;
    const queued = [...runs.values()].filter((r) => r.tenant === p.tenantId && r.status === 'queued').length;
    const subject = (input.subject ?? {}) as Record<string, unknown>;
    if (subject.exhaustEnvelope === true) {
      opts.observe?.admission('refused_402', input.kind, 'envelope.runs');
      throw new ControlPlaneError('envelope_exhausted', 'no runs left', { rule: 'envelope.runs' });
    }
    if (queued >= maxQueued) {
      opts.observe?.admission('refused_429', input.kind, 'tenant.queue_depth');
      throw new ControlPlaneError('capacity_exceeded', 'queue full', {
        rule: 'tenant.queue_depth',
        retryAfterMs: 1500,
      });
    }
    opts.observe?.admission('admitted', input.kind);
    const t = now();
    const runId = id('run');
    // run-model validates the kind's subject (RunModelError invalid_input → 400), as the real core does.
    const run = Run.parse({
      id: runId,
      tenant: p.tenantId,
      kind: input.kind,
      subject: input.subject,
      status: 'queued',
      origin: causer
        ? { cause: 'run', causedByRunId: causer.id, actor: p.actor }
        : { cause: 'api', actor: p.actor },
      placement: input.placement ?? { where: 'inline' },
      lifetime: input.lifetime,
      attach: input.attach,
      class: input.class ?? 'interactive',
      ...(groupId ? { group: { id: groupId, role: 'case' } } : {}),
      ...(input.lineage ? { lineage: input.lineage } : {}),
      ...(input.expiresAt ? { expiresAt: input.expiresAt } : {}),
      outputs: { artifacts: [], files: [], scores: [] },
      usage: EMPTY_USAGE,
      createdBy: p.actor,
      createdAt: t,
      updatedAt: t,
    });
    const view: RunView = {
      ...run,
      causalDepth: causer ? causer.causalDepth + 1 : 0,
      record: { head: '', length: 0 },
    };
    runs.set(runId, view);
    emit(p.tenantId, runId, 'run.queued', { runId, cause: view.origin.cause });
    return view;
  };
  const settle = (run: RunView, status: RunStatus): RunView => {
    const t = now();
    const next: RunView = {
      ...run,
      status,
      updatedAt: t,
      ...(status === 'running' || status === 'succeeded' ? { startedAt: run.startedAt ?? t } : {}),
      ...(TERMINAL.has(status) ? { settledAt: t } : {}),
      ...(status === 'failed' ? { error: { code: 'failed', message: 'failed' } } : {}),
    };
    runs.set(run.id, next);
    if (TERMINAL.has(status)) emit(run.tenant, run.id, 'run.settled', { runId: run.id, outcome: status });
    else emit(run.tenant, run.id, status === 'running' ? 'run.started' : `run.${status}`, { runId: run.id });
    return next;
  };
  return {
    emit: (tenantId, runId, kind, payload) => emit(tenantId, runId, kind, payload),
    auth: {
      async authenticate(raw) {
        const k = [...keys.values()].find((x) => x.secret === raw && x.revokedAt === null);
        if (!k) throw new ControlPlaneError('unauthorized', 'invalid API key');
        return { tenantId: k.tenantId, keyId: k.id, role: k.role, actor: `key:${k.id}` };
      },
      async createKey(p, input) {
        admin(p);
        const i = CreateKeyInput.parse(input);
        return newKey(p.tenantId, i.role, i.label);
      },
      async listKeys(p) {
        admin(p);
        return [...keys.values()].filter((k) => k.tenantId === p.tenantId).map(({ secret: _s, ...v }) => v);
      },
      async revokeKey(p, keyId) {
        admin(p);
        const k = own(keys, p, keyId, 'key');
        k.revokedAt = now();
        const { secret: _s, ...v } = k;
        return v;
      },
      async createTenant(p, input) {
        admin(p);
        if ([...keys.values()].some((k) => k.tenantId === input.id))
          throw new ControlPlaneError('conflict', 'tenant exists');
        return { tenantId: input.id, key: newKey(input.id, 'admin', 'first admin') };
      },
      async policy(p) {
        admin(p);
        return policies.get(p.tenantId) ?? tenantPolicy();
      },
      async setPolicy(p, input) {
        admin(p);
        const next = tenantPolicy({ ...(policies.get(p.tenantId) ?? {}), cascade: input.cascade });
        policies.set(p.tenantId, next);
        return next;
      },
    },
    runs: {
      async create(p, input, ctx) {
        const run = createRun(p, input, ctx?.causedByRunId);
        return {
          run,
          admission: {
            decision: 'admitted' as const,
            class: run.class ?? 'interactive',
            envelopeId: `env_${p.tenantId}`,
            position: null,
          },
        };
      },
      async createMany(p, inputs) {
        return Promise.all(
          inputs.map((input) =>
            this.create(p, input as CreateRunInput).then(
              (created) => ({ created }),
              (error: unknown) => ({ error }),
            ),
          ),
        );
      },
      async list(p, q) {
        const limit = q.limit ?? 50;
        const all = [...runs.values()]
          .filter(
            (r) =>
              r.tenant === p.tenantId &&
              (!q.kind || r.kind === q.kind) &&
              (!q.status || r.status === q.status) &&
              (!q.causedBy || r.origin.causedByRunId === q.causedBy) &&
              (!q.groupId || r.group?.id === q.groupId),
          )
          .reverse();
        const start = q.cursor ? Math.max(0, all.findIndex((r) => r.id === q.cursor) + 1) : 0;
        const items = all.slice(start, start + Number(limit));
        return { items, nextCursor: start + items.length < all.length ? (items.at(-1)?.id ?? null) : null };
      },
      async get(p, runId) {
        return own(runs, p, runId, 'run');
      },
      async scores(p, runId) {
        own(runs, p, runId, 'run');
        return []; // this fake scores nothing (fake-groups keeps aggregates only)
      },
      async cancel(p, runId) {
        const root = own(runs, p, runId, 'run');
        if (TERMINAL.has(root.status))
          throw new ControlPlaneError('conflict', 'run already terminal', { status: root.status });
        const cancelled: string[] = [];
        const walk = (r: RunView) => {
          if (!TERMINAL.has(r.status)) {
            settle(r, 'cancelled');
            cancelled.push(r.id);
          }
          for (const child of runs.values()) if (child.origin.causedByRunId === r.id) walk(child);
        };
        walk(root);
        return { run: root, cancelled };
      },
      async record(p, runId) {
        const r = own(runs, p, runId, 'run');
        return { wire: { format: 'fake', runId: r.id }, verify: { ok: true, length: 0 } };
      },
      async events(p, runId, o) {
        own(runs, p, runId, 'run');
        const after = Number(o?.after ?? 0);
        const all = events.filter((e) => e.runId === runId && Number(e.id) > after);
        const items = all.slice(0, o?.limit ?? 200);
        return { items, nextCursor: items.length < all.length ? (items.at(-1)?.id ?? null) : null };
      },
    },
    events: {
      async list(p, o) {
        const items = events.filter((e) => e.tenant === p.tenantId && Number(e.id) > Number(o?.after ?? 0));
        return { items, nextCursor: null };
      },
      async subscribe(p, o, onEvent) {
        const l = (e: EventView) => {
          if (e.tenant === p.tenantId && (!o.runId || e.runId === o.runId)) onEvent(e);
        };
        for (const e of events) if (Number(e.id) > Number(o.after ?? 0)) l(e);
        listeners.add(l);
        // No back-pressure here (the real feed's is tested on the real core).
        return { resume: () => undefined, close: async () => void listeners.delete(l) };
      },
    },
    groups: fakeGroups({ id, now, runs, own, createRun }),
    subscriptions: {
      async create(p, raw) {
        const input = CreateSubscriptionInput.parse(raw);
        const s: SubscriptionView = {
          id: id('sub'),
          tenantId: p.tenantId,
          name: input.name,
          selector: input.selector ?? { kind: 'schedule.fired', filter: {} },
          schedule: input.schedule ?? null,
          runSpec: input.runSpec,
          cooldownSec: input.cooldownSec,
          maxDepth: input.maxDepth,
          enabled: input.enabled,
          disabledReason: input.enabled ? null : 'disabled',
          lastFiredAt: null,
          nextFireAt: null,
          createdBy: p.actor,
          createdAt: now(),
        };
        subs.set(s.id, s);
        return s;
      },
      async list(p) {
        return [...subs.values()].filter((s) => s.tenantId === p.tenantId);
      },
      async get(p, sid) {
        return own(subs, p, sid, 'subscription');
      },
      async setEnabled(p, sid, enabled) {
        const s = own(subs, p, sid, 'subscription');
        s.enabled = enabled;
        s.disabledReason = enabled ? null : 'disabled';
        return s;
      },
      async delete(p, sid) {
        own(subs, p, sid, 'subscription');
        subs.delete(sid);
      },
      async firings(p, sid) {
        own(subs, p, sid, 'subscription'); // fires nothing here: the real consumer is tested on the real core
        return { items: [], nextBefore: null };
      },
    },
    agentBridge: {
      async report(p, raw) {
        const input = AgentRunEventInput.parse(raw);
        if (input.event === 'started') {
          const agent = input.agent ?? { agentId: 'agent', agentVersion: '0', permissionMode: 'ask' };
          const subject = {
            agentId: agent.agentId,
            agentVersion: agent.agentVersion,
            permissionMode: agent.permissionMode,
          };
          return createRun(p, { kind: 'agent', subject });
        }
        if (!input.runId) throw new ControlPlaneError('bad_request', 'runId is required after started');
        const run = own(runs, p, input.runId, 'run');
        if (TERMINAL.has(run.status)) throw new ControlPlaneError('conflict', 'run already terminal');
        const to =
          input.event === 'resumed'
            ? 'running'
            : input.event === 'suspended'
              ? 'awaiting_input'
              : input.event;
        return settle(run, to);
      },
    },
  };
}
