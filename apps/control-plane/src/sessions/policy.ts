// The tenant's session policy, as admission holds it (adm_tenants.policy): the TTL ceiling and the price.
import { type TenantPolicyInput, tenantPolicy } from '@everdict/admission';
import type { Executor } from '../db/tx.js';
import { notFound } from '../errors.js';

export interface SessionPolicy {
  readonly maxSessionTtlSec: number;
  readonly sessionUsdPerHour: number;
}

export async function sessionPolicy(ex: Executor, tenant: string): Promise<SessionPolicy> {
  const row = await ex
    .selectFrom('adm_tenants')
    .select('policy')
    .where('tenant', '=', tenant)
    .executeTakeFirst();
  if (!row) throw notFound('tenant', tenant);
  const p = tenantPolicy(row.policy as TenantPolicyInput);
  return { maxSessionTtlSec: p.maxSessionTtlSec, sessionUsdPerHour: p.sessionUsdPerHour };
}
