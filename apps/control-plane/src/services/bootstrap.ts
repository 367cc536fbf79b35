// Tenant `default` and its first admin key. An explicit key is idempotent (its hash is the row's
// identity); a generated key is made only while the tenant has no active admin key — so restarts of
// the same database print nothing new. The tenant row is locked while deciding: two replicas starting
// at once install one generated key, not two.
import type { TenantPolicyInput } from '@everdict/admission';
import { sql } from 'kysely';
import { withTx } from '../db/tx.js';
import { ensureTenant, hashKey, insertKey, OPERATOR_TENANT } from './auth.js';
import type { Deps } from './context.js';
import type { CoreOptions } from './options.js';

export const BOOTSTRAP_TENANT = OPERATOR_TENANT;

export interface BootstrapOutcome {
  tenantId: typeof BOOTSTRAP_TENANT;
  /** Tenant `default` did not exist before this start. */
  tenantCreated: boolean;
  /** A key row was inserted by this start (explicit key not seen before, or a generated one). */
  keyCreated: boolean;
  /** The generated key, present only on the start that installed it: show it once, it is not stored. */
  generatedKey?: string;
}

export async function bootstrapTenant(
  deps: Deps,
  policy: TenantPolicyInput,
  options: Pick<CoreOptions, 'bootstrapKey' | 'generateBootstrapKey'>,
): Promise<BootstrapOutcome | null> {
  if (!options.bootstrapKey && !options.generateBootstrapKey) return null;
  const before = await deps.db
    .selectFrom('tenants')
    .select('id')
    .where('id', '=', BOOTSTRAP_TENANT)
    .executeTakeFirst();
  await ensureTenant(deps, BOOTSTRAP_TENANT, BOOTSTRAP_TENANT, policy);
  return withTx(deps.db, async (tx) => {
    await sql`SELECT id FROM tenants WHERE id = ${BOOTSTRAP_TENANT} FOR UPDATE`.execute(tx);
    const txDeps = { ...deps, db: tx };
    const outcome: BootstrapOutcome = {
      tenantId: BOOTSTRAP_TENANT,
      tenantCreated: before === undefined,
      keyCreated: false,
    };
    if (options.bootstrapKey) {
      const known = await tx
        .selectFrom('api_keys')
        .select('id')
        .where('key_hash', '=', hashKey(options.bootstrapKey))
        .executeTakeFirst();
      if (!known) {
        await insertKey(txDeps, BOOTSTRAP_TENANT, options.bootstrapKey, 'admin', 'bootstrap');
        outcome.keyCreated = true;
      }
      return outcome;
    }
    const admin = await tx
      .selectFrom('api_keys')
      .select('id')
      .where('tenant_id', '=', BOOTSTRAP_TENANT)
      .where('role', '=', 'admin')
      .where('revoked_at', 'is', null)
      .limit(1)
      .executeTakeFirst();
    if (admin || !options.generateBootstrapKey) return outcome;
    const generatedKey = options.generateBootstrapKey();
    await insertKey(txDeps, BOOTSTRAP_TENANT, generatedKey, 'admin', 'bootstrap (generated)');
    return { ...outcome, keyCreated: true, generatedKey };
  });
}
