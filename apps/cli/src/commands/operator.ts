// `--operator`: the operator's door (`/internal/*`) to what is shared by every tenant — shared runners and agent
// hosts — with the service token instead of the API key; and the hint a tenant admin gets when it asked its own
// door for something shared.
import { ClientError, isClientError } from '@everdict/client';
import { z } from 'zod';
import { type Context, operatorToken } from '../context.js';
import { CliError } from '../errors.js';
import { SECRETS_FILE } from '../stack/secrets.js';

/** The service token `--operator` calls with, or a usage error saying where it comes from. */
export function serviceToken(ctx: Context): string {
  const token = operatorToken(ctx.url, ctx.io.env);
  if (!token)
    throw new CliError(
      'usage',
      `--operator needs the service token: set EVERDICT_INTERNAL_TOKEN (the main job's own is used on its URL, from ${SECRETS_FILE} in its data directory)`,
    );
  return token;
}

/** The tenant routes' refusal of something shared (403 `forbidden`, `details.reason` naming what). */
const SharedRefusal = z.object({
  details: z.object({ reason: z.enum(['shared_runner', 'shared_agent_host']) }),
});

/** Rethrows `e`; a refusal of something shared says the command that takes the operator's door instead. */
export function sharedHint(e: unknown, command: string): never {
  if (isClientError(e, 'forbidden') && SharedRefusal.safeParse(e.problem).success)
    throw new ClientError(e.code, e.status, `${e.message} (${command} --operator)`, e.problem);
  throw e;
}

/** The `--operator` flag of the commands that take the operator's door (runner token|drain|revoke, agent hosts). */
export const OPERATOR_OPTION = [
  '--operator',
  "the shared one(s), through the operator's door with the service token (EVERDICT_INTERNAL_TOKEN)",
] as const;
