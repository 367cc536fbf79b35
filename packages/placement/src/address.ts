// Content addresses shared by every driver and by hosts in other processes (a park restored elsewhere
// must match): snapshot address = BLAKE3 of the tar bytes; environment address = BLAKE3 of the canonical
// JSON {"driver","image","imageDigest"} (run-model's canonicalJson: RFC 8785, keys sorted, no spaces). BLAKE3 is
// @everdict/runrecord's.
import { canonicalJson } from '@everdict/run-model';
import { blake3, bytesToHex } from '@everdict/runrecord';
import type { Environment } from './spec.js';

export { canonicalJson };

const utf8 = new TextEncoder();

/** BLAKE3-256 of `bytes`, as 64 lowercase hex. */
export function blake3Hex(bytes: Uint8Array): string {
  return bytesToHex(blake3(bytes));
}

/** The address of a snapshot: BLAKE3 of its tar bytes. */
export function snapshotAddress(tar: Uint8Array): string {
  return blake3Hex(tar);
}

/** The canonical manifest bytes of an environment: {"driver":…,"image":…,"imageDigest":…}. */
export function environmentManifest(driver: string, image: string, imageDigest: string | null): string {
  return canonicalJson({ driver, image, imageDigest });
}

/** An environment with its address = BLAKE3 of the canonical manifest. */
export function environmentOf(driver: string, image: string, imageDigest: string | null): Environment {
  const address = blake3Hex(utf8.encode(environmentManifest(driver, image, imageDigest)));
  return { driver, image, imageDigest, address };
}
