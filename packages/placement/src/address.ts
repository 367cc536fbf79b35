// Content addresses shared by every driver and by hosts in other processes (a park restored elsewhere
// must match): snapshot address = BLAKE3 of the tar bytes; environment address = BLAKE3 of the canonical
// JSON {"driver","image","imageDigest"} (keys sorted, no spaces). BLAKE3 is @everdict/runrecord's.
import { blake3, bytesToHex } from '@everdict/runrecord';
import type { Environment } from './spec.js';

const utf8 = new TextEncoder();

/** BLAKE3-256 of `bytes`, as 64 lowercase hex. */
export function blake3Hex(bytes: Uint8Array): string {
  return bytesToHex(blake3(bytes));
}

/** The address of a snapshot: BLAKE3 of its tar bytes. */
export function snapshotAddress(tar: Uint8Array): string {
  return blake3Hex(tar);
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** JSON with object keys sorted (by UTF-16 code unit, as Array.sort does) and no whitespace. */
export function canonicalJson(value: Json): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k] as Json)}`).join(',')}}`;
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
