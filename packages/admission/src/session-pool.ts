// The session pool: held-open runs share admission but not dispatch. They draw from their own per-tenant
// and global caps, and a member reserve guarantees a person can always hold `memberReserve` sessions
// open however many the tenant's agents hold: non-member sessions may fill at most
// maxSessions - memberReserve slots.

export interface SessionLoad {
  /** Open sessions in the pool. */
  readonly total: number;
  /** Of those, member-caused. */
  readonly member: number;
}

export interface PoolCaps {
  readonly maxSessions: number;
  readonly memberReserve: number;
}

/** A session is a member's when a person opened it directly (not caused by a run). */
export function isMemberSession(request: { cause: string; causedByRunId?: string | undefined }): boolean {
  return request.cause === 'member' && request.causedByRunId === undefined;
}

/** Whether the pool has a slot for one more session of this kind. */
export function hasRoom(load: SessionLoad, caps: PoolCaps, member: boolean): boolean {
  if (load.total >= caps.maxSessions) return false;
  return member || load.total - load.member < caps.maxSessions - caps.memberReserve;
}

/** Which pool refuses (the tenant's is checked first), or null if both have room. */
export function sessionBlock(
  tenant: { load: SessionLoad; caps: PoolCaps },
  global: { load: SessionLoad; caps: PoolCaps },
  member: boolean,
): 'tenant' | 'global' | null {
  if (!hasRoom(tenant.load, tenant.caps, member)) return 'tenant';
  if (!hasRoom(global.load, global.caps, member)) return 'global';
  return null;
}

/** The load after one session of this kind opens (+1) or closes (-1). */
export function adjust(load: SessionLoad, member: boolean, delta: 1 | -1): SessionLoad {
  return { total: load.total + delta, member: load.member + (member ? delta : 0) };
}
