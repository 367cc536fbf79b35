// everdict sandbox list|show — the tenant's held-open sessions as the control plane reports them
// (`GET /sandboxes`, `GET /sandboxes/:id`: the SessionView): open or parked, how long each has left before the
// reaper closes it (its TTL, and its idle timeout while open), and what it has drawn so far (estimated).
import { z } from 'zod';
import type { Context } from '../context.js';
import { documented } from '../errors.js';
import { line } from '../io.js';
import { age, span, table } from '../table.js';

/** The fields printed; the rest of the SessionView is in `--json`. */
const ShownSession = z.object({
  id: z.string(),
  status: z.string(),
  state: z.string(),
  image: z.string(),
  holder: z.string(),
  openedAt: z.string(),
  expiresAt: z.string(),
  ttlLeftSec: z.number(),
  idleTimeoutSec: z.number(),
  idleLeftSec: z.number().nullable(),
  lastActivityAt: z.string(),
  burn: z.object({ usdPerHour: z.number(), usd: z.number(), energyUj: z.number(), provenance: z.string() }),
  snapshot: z.string().nullable(),
});
type ShownSession = z.infer<typeof ShownSession>;
const SessionList = z.object({ items: z.array(ShownSession) });

/** Its idle timeout's time left (a parked session's is not running: its TTL alone closes it). */
const idleLeft = (s: ShownSession) =>
  s.idleLeftSec === null
    ? `- (parked: its idle timeout of ${span(s.idleTimeoutSec)} runs again once resumed)`
    : `${span(s.idleLeftSec)} of ${span(s.idleTimeoutSec)}`;
const burn = (s: ShownSession) =>
  `$${s.burn.usd.toFixed(4)} at $${s.burn.usdPerHour.toFixed(4)}/h, ${(s.burn.energyUj / 1e6).toFixed(1)} J (${s.burn.provenance})`;

export async function listSandboxes(ctx: Context, o: { json?: boolean }): Promise<number> {
  const raw = await ctx.call<unknown>('GET', '/sandboxes');
  if (o.json) {
    line(ctx.io.stdout, JSON.stringify(raw));
    return 0;
  }
  const { items } = documented(SessionList, raw, 'session list', 'SessionList');
  if (items.length === 0) {
    line(ctx.io.stdout, 'no sandbox is open or parked (everdict sandbox open opens one)');
    return 0;
  }
  const rows = items.map((s) => [
    s.id,
    s.state,
    s.image,
    age(s.openedAt),
    span(s.ttlLeftSec),
    s.idleLeftSec === null ? '-' : span(s.idleLeftSec),
    `$${s.burn.usd.toFixed(4)}`,
  ]);
  line(ctx.io.stdout, table(['sandbox', 'state', 'image', 'age', 'ttl left', 'idle left', 'drawn'], rows));
  return 0;
}

export async function showSandbox(ctx: Context, id: string, o: { json?: boolean }): Promise<number> {
  const raw = await ctx.call<unknown>('GET', `/sandboxes/${encodeURIComponent(id)}`);
  if (o.json) {
    line(ctx.io.stdout, JSON.stringify(raw));
    return 0;
  }
  const s = documented(ShownSession, raw, 'session', 'SessionView');
  line(ctx.io.stdout, `${s.id}  sandbox  ${s.state} (${s.status})`);
  const rows = [
    ['image', s.image],
    ['holder', s.holder],
    ['opened', `${s.openedAt} (${age(s.openedAt)} ago)`],
    ['expires', `${s.expiresAt} (in ${span(s.ttlLeftSec)})`],
    ['idle left', `${idleLeft(s)}; last activity ${age(s.lastActivityAt)} ago`],
    ['drawn', burn(s)],
    ...(s.snapshot ? [['snapshot', s.snapshot]] : []),
  ];
  for (const l of table(['', ''], rows).split('\n').slice(1)) line(ctx.io.stdout, `  ${l}`);
  return 0;
}
