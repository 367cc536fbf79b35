// API keys per tenant: only a SHA-256 hash at rest, the raw key shown once. Roles member | admin.
import { hash } from 'node:crypto';
import { configureTenant, type TenantPolicyInput, tenantPolicy } from '@everdict/admission';
import { sql } from 'kysely';
import { PgAdmissionStore } from '../admission-store/sql/store.js';
import { KEY_CACHE_MS, KEYS_CHANNEL, KeyCache } from '../auth/key-cache.js';
import { generateApiKey } from '../auth/secrets.js';
import { EVICT_ALL } from '../auth/ttl-cache.js';
import { iso } from '../db/numeric.js';
import { withTx } from '../db/tx.js';
import { ControlPlaneError, notFound } from '../errors.js';
import type { AuthService } from './api.js';
import { asControlPlaneError } from './boundary.js';
import type { Deps } from './context.js';
import { disableForRevokedKey } from './subscriptions.js';
import { type ApiKeyView, CreateKeyInput, type Principal, type Role, TenantPolicyPatch } from './types.js';

// One-shot `hash` (no Hash object per call): the same SHA-256 hex as createHash(...).update(raw, 'utf8').digest('hex').
export const hashKey = (raw: string): string => hash('sha256', raw, 'hex');

function requireAdmin(p: Principal): void {
  if (p.role !== 'admin') throw new ControlPlaneError('forbidden', 'admin role required');
}

/** The deployment's operator tenant: its admins alone create tenants (bootstrap.ts installs it). */
export const OPERATOR_TENANT = 'default';

function requireOperator(p: Principal): void {
  requireAdmin(p);
  if (p.tenantId !== OPERATOR_TENANT)
    throw new ControlPlaneError('forbidden', `only an admin of tenant ${OPERATOR_TENANT} creates tenants`);
}

type KeyRow = {
  id: string;
  tenant_id: string;
  role: Role;
  label: string;
  created_at: Date;
  revoked_at: Date | null;
};
const view = (r: KeyRow): ApiKeyView => ({
  id: r.id,
  tenantId: r.tenant_id,
  role: r.role,
  label: r.label,
  createdAt: iso(r.created_at)!,
  revokedAt: iso(r.revoked_at),
});

/** Create a tenant (idempotent) with its admission policy; insert one key. */
export async function ensureTenant(
  deps: Deps,
  tenantId: string,
  name: string,
  policy: TenantPolicyInput,
): Promise<void> {
  await withTx(deps.db, async (tx) => {
    await tx
      .insertInto('tenants')
      .values({ id: tenantId, name, created_at: deps.clock() })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    await configureTenant(new PgAdmissionStore(tx), tenantId, policy);
  });
}

export async function insertKey(
  deps: Deps,
  tenantId: string,
  raw: string,
  role: Role,
  label: string,
): Promise<KeyRow> {
  return deps.db
    .insertInto('api_keys')
    .values({
      id: deps.ids('key'),
      tenant_id: tenantId,
      key_hash: hashKey(raw),
      role,
      label,
      created_at: deps.clock(),
    })
    .onConflict((oc) => oc.column('key_hash').doNothing())
    .returningAll()
    .executeTakeFirst()
    .then(
      (r) =>
        r ??
        deps.db
          .selectFrom('api_keys')
          .selectAll()
          .where('key_hash', '=', hashKey(raw))
          .executeTakeFirstOrThrow(),
    );
}

/** `keys`: verified keys remembered by this replica (key-cache.ts); the core evicts on KEYS_CHANNEL. */
export function authService(
  deps: Deps,
  policy: TenantPolicyInput,
  keys: KeyCache = new KeyCache(),
  recheckMs: number = KEY_CACHE_MS,
): AuthService {
  const service: AuthService = {
    async authenticate(rawKey) {
      // One key read at a time per key (a cache miss under load is shared); a revocation heard while it is
      // in flight keeps its answer out of the cache (ttl-cache.ts).
      const principal = rawKey
        ? await keys.lookup(hashKey(rawKey), async (hash): Promise<Principal | undefined> => {
            const row = await deps.db
              .selectFrom('api_keys')
              .selectAll()
              .where('key_hash', '=', hash)
              .executeTakeFirst();
            if (!row || row.revoked_at) return undefined;
            return { tenantId: row.tenant_id, keyId: row.id, role: row.role, actor: row.id };
          })
        : undefined;
      if (!principal) throw new ControlPlaneError('unauthorized', 'unknown or revoked API key');
      return principal;
    },
    watch(rawKey, onRevoked) {
      // An eviction of this key (or of every key) re-reads it at once: the local revoke evicts after its
      // commit, a NOTIFY arrives after the revoking commit, so the read sees the revocation. The periodic
      // re-check (through the cache: a read per key at most every KEY_CACHE_MS) covers a missed NOTIFY.
      const hash = hashKey(rawKey);
      return untilRevoked(
        keys,
        recheckMs,
        (k) => k === hash || EVICT_ALL.includes(k),
        () =>
          service.authenticate(rawKey).then(
            () => 'live' as const,
            (e: unknown) => {
              // Only a refusal ends what the key holds; a ledger that does not answer is not a revocation.
              if (e instanceof ControlPlaneError && e.code === 'unauthorized') return 'revoked' as const;
              throw e;
            },
          ),
        onRevoked,
      );
    },
    watchKeyId(keyId, onRevoked) {
      // The eviction's payload is a hash, not an id: any eviction re-reads the one row (few are watched).
      const stop = untilRevoked(
        keys,
        recheckMs,
        () => true,
        async () => {
          const row = await deps.db
            .selectFrom('api_keys')
            .select('revoked_at')
            .where('id', '=', keyId)
            .executeTakeFirst();
          // No API key: a service actor, never revoked.
          return !row ? 'gone' : row.revoked_at === null ? 'live' : 'revoked';
        },
        onRevoked,
        true,
      );
      return stop;
    },
    async createKey(p, input) {
      requireAdmin(p);
      const { role, label } = asControlPlaneError(() => CreateKeyInput.parse(input), { in: 'body' });
      const raw = generateApiKey();
      return { ...view(await insertKey(deps, p.tenantId, raw, role, label)), key: raw };
    },
    async listKeys(p) {
      requireAdmin(p);
      const rows = await deps.db
        .selectFrom('api_keys')
        .selectAll()
        .where('tenant_id', '=', p.tenantId)
        .orderBy('created_at')
        .execute();
      return rows.map(view);
    },
    async revokeKey(p, keyId) {
      requireAdmin(p);
      // The NOTIFY rides in the revoking transaction: every listening replica evicts the key at its commit.
      // Idempotent: a revoked key keeps the time of its first revocation (the row is not written again).
      const row = await withTx(deps.db, async (tx) => {
        const r = await tx
          .updateTable('api_keys')
          .set({ revoked_at: deps.clock() })
          .where('tenant_id', '=', p.tenantId)
          .where('id', '=', keyId)
          .where('revoked_at', 'is', null)
          .returningAll()
          .executeTakeFirst();
        if (r) await sql`SELECT pg_notify(${KEYS_CHANNEL}, ${r.key_hash})`.execute(tx);
        // What acts with the key's authority past its requests stops with it, in this transaction: the
        // subscriptions it created (they say `disabledReason: key_revoked`).
        if (r) await disableForRevokedKey(tx, p.tenantId, r.id);
        return (
          r ??
          tx
            .selectFrom('api_keys')
            .selectAll()
            .where('tenant_id', '=', p.tenantId)
            .where('id', '=', keyId)
            .executeTakeFirst()
        );
      });
      if (!row) throw notFound('key', keyId);
      keys.evict(row.key_hash);
      return view(row);
    },
    async createTenant(p, input) {
      requireOperator(p);
      if (!/^[a-z0-9][a-z0-9_-]{0,62}$/.test(input.id))
        throw new ControlPlaneError('bad_request', 'tenant id must be [a-z0-9_-]');
      // One transaction, decided by the tenant row's insert: of concurrent creates of one id exactly one
      // inserts it (the others wait on its key, then find it) — one tenant, one initial admin key; a refused
      // create writes nothing.
      const raw = generateApiKey();
      const key = await withTx(deps.db, async (tx) => {
        const inserted = await tx
          .insertInto('tenants')
          .values({ id: input.id, name: input.name ?? input.id, created_at: deps.clock() })
          .onConflict((oc) => oc.column('id').doNothing())
          .returning('id')
          .executeTakeFirst();
        if (!inserted) throw new ControlPlaneError('conflict', `tenant ${input.id} exists`);
        await configureTenant(new PgAdmissionStore(tx), input.id, policy);
        return insertKey({ ...deps, db: tx }, input.id, raw, 'admin', 'initial admin');
      });
      return { tenantId: input.id, key: { ...view(key), key: raw } };
    },
    async policy(p) {
      requireAdmin(p);
      const row = await deps.db
        .selectFrom('adm_tenants')
        .select('policy')
        .where('tenant', '=', p.tenantId)
        .executeTakeFirst();
      if (!row) throw notFound('tenant', p.tenantId);
      return tenantPolicy(row.policy as TenantPolicyInput);
    },
    async setPolicy(p, input) {
      requireAdmin(p);
      const patch = asControlPlaneError(() => TenantPolicyPatch.parse(input), { in: 'body' });
      return withTx(deps.db, async (tx) => {
        const row = await tx
          .selectFrom('adm_tenants')
          .select('policy')
          .where('tenant', '=', p.tenantId)
          .forUpdate()
          .executeTakeFirst();
        if (!row) throw notFound('tenant', p.tenantId);
        const set = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
        const next = tenantPolicy({ ...(row.policy as TenantPolicyInput), ...set });
        await new PgAdmissionStore(tx).putTenant(p.tenantId, next);
        return next;
      });
    },
  };
  return service;
}

/**
 * Re-reads a key's `state` on an eviction `evicts` names and every `recheckMs` (and at once with `now`) until it
 * answers `revoked` (then `onRevoked`) or `gone`; a read that fails is no answer. Answers the stop.
 */
function untilRevoked(
  keys: KeyCache,
  recheckMs: number,
  evicts: (evicted: string) => boolean,
  state: () => Promise<'live' | 'revoked' | 'gone'>,
  onRevoked: () => void,
  now = false,
): () => void {
  let stopped = false;
  const check = () => {
    if (stopped) return;
    state().then(
      (s) => {
        if (stopped || s === 'live') return;
        stop();
        if (s === 'revoked') onRevoked();
      },
      () => undefined,
    );
  };
  const off = keys.onEvict((k) => {
    if (evicts(k)) check();
  });
  const timer = setInterval(check, recheckMs);
  timer.unref?.();
  const stop = () => {
    stopped = true;
    off();
    clearInterval(timer);
  };
  if (now) check();
  return stop;
}
