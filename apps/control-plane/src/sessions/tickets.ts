// Terminal tickets: short-lived (30 s), single-use, bound to a run and the caller who minted it, stored as a
// SHA-256 hash. Redemption is one conditional UPDATE, so across replicas on one database a ticket is
// redeemed exactly once; an unknown, spent, expired or other-run ticket — or one whose minting API key has
// been revoked since — is the same 401.
import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Executor } from '../db/tx.js';
import { ControlPlaneError } from '../errors.js';

export const TICKET_TTL_MS = 30_000;

const hashOf = (ticket: string) => createHash('sha256').update(ticket, 'utf8').digest('hex');

export async function mintTicket(
  ex: Executor,
  tenant: string,
  runId: string,
  actor: string,
  now: Date,
): Promise<{ ticket: string; expiresAt: string }> {
  const ticket = `evt_${randomBytes(32).toString('base64url')}`;
  const expiresAt = new Date(now.getTime() + TICKET_TTL_MS);
  await ex
    .insertInto('terminal_tickets')
    .values({
      ticket_hash: hashOf(ticket),
      tenant_id: tenant,
      run_id: runId,
      actor,
      created_at: now,
      expires_at: expiresAt,
    })
    .execute();
  // Spent and expired tickets are kept for a while (audit), then dropped by the next mint.
  await sql`DELETE FROM terminal_tickets WHERE expires_at < ${new Date(now.getTime() - 3_600_000)}`.execute(
    ex,
  );
  return { ticket, expiresAt: expiresAt.toISOString() };
}

/** Redeem once: `{tenant, actor}` the ticket was bound to, or 401 invalid_terminal_ticket. */
export async function redeemTicket(
  ex: Executor,
  runId: string,
  ticket: string,
  now: Date,
): Promise<{ tenant: string; actor: string }> {
  const row = await ex
    .updateTable('terminal_tickets')
    .set({ redeemed_at: now })
    .where('ticket_hash', '=', hashOf(ticket))
    .where('run_id', '=', runId)
    .where('redeemed_at', 'is', null)
    .where('expires_at', '>', now)
    // A ticket is its minting key's grant: once that key is revoked the ticket is refused like a spent one
    // (and is not spent). An actor that is no API key (a service) has no row here.
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('api_keys')
            .select('api_keys.id')
            .whereRef('api_keys.id', '=', 'terminal_tickets.actor')
            .where('api_keys.revoked_at', 'is not', null),
        ),
      ),
    )
    .returning(['tenant_id', 'actor'])
    .executeTakeFirst();
  if (!row)
    throw new ControlPlaneError(
      'invalid_terminal_ticket',
      'this terminal ticket is unknown, spent, expired or for another run',
    );
  return { tenant: row.tenant_id, actor: row.actor };
}
