// Secret handling for the HTTP edge: constant-time comparison over equal-length digests, and the
// shape of the credentials this app accepts.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * Compare a presented secret with the expected one in time independent of where they differ and of
 * their lengths: both sides are hashed to 32 bytes first, so `timingSafeEqual` always sees equal lengths.
 */
export function constantTimeEqual(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), digest(expected));
}

/** `Authorization: Bearer <secret>` → the secret; anything else → undefined. */
export function bearerSecret(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer[ \t]+([\x21-\x7e]{1,512})[ \t]*$/i.exec(header);
  return m?.[1];
}

/**
 * A fresh API key: `evk_` + 32 random bytes, base64url (43 characters) — every key this app mints, the generated
 * bootstrap key and `POST /api-keys`' alike, so one prefix finds them all (a secret scanner's pattern, a grep);
 * the other secrets carry their own: `evp_` a runner pairing token, `evr_` a runner credential, `evt_` a ticket.
 */
export function generateApiKey(): string {
  return `evk_${randomBytes(32).toString('base64url')}`;
}
