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

/** A fresh API key: `evd_` + 32 random bytes, base64url (43 characters). */
export function generateApiKey(): string {
  return `evd_${randomBytes(32).toString('base64url')}`;
}
