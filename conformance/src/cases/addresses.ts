// The recognisable addresses every vector uses. Ids are H(label); parks use repeated-byte patterns so a
// hand-written layout can be read at a glance.
import { labelAddress } from '../reference/bytes.js';

export const UNIT_A = labelAddress('unit-a');
export const GRANTS_A = labelAddress('grants-a');
export const UNIT_B = labelAddress('unit-b');
export const GRANTS_B = labelAddress('grants-b');

/** H("attestation-<n>"): the attestation an executed segment points at. */
export function att(n: number): string {
  return labelAddress(`attestation-${n}`);
}

export const ROOT = '11'.repeat(32);
export const MEMORY = '22'.repeat(32);
export const TRANSCRIPT = '33'.repeat(32);
export const MANIFEST = '44'.repeat(32);
export const ROOT_B = '55'.repeat(32);
export const MANIFEST_B = '66'.repeat(32);
export const MEMORY_B = '77'.repeat(32);
export const ZEROS = '00'.repeat(32);

export const ADDRESS_BOOK: ReadonlyArray<{ name: string; value: string; meaning: string }> = [
  { name: 'UNIT_A', value: UNIT_A, meaning: 'H("unit-a"): the unit of every record unless stated' },
  {
    name: 'GRANTS_A',
    value: GRANTS_A,
    meaning: 'H("grants-a"): the grant set of every record unless stated',
  },
  { name: 'UNIT_B', value: UNIT_B, meaning: 'H("unit-b"): a different unit (splice tests)' },
  { name: 'GRANTS_B', value: GRANTS_B, meaning: 'H("grants-b"): a different grant set (splice tests)' },
  ...[1, 2, 3, 4, 5].map((n) => ({
    name: `ATT_${n}`,
    value: att(n),
    meaning: `H("attestation-${n}"): an executed interval's attestation`,
  })),
  { name: 'ROOT', value: ROOT, meaning: '0x11×32: an image park filesystem root' },
  { name: 'MEMORY', value: MEMORY, meaning: '0x22×32: an image park memory image' },
  { name: 'TRANSCRIPT', value: TRANSCRIPT, meaning: '0x33×32: a transcript park' },
  { name: 'MANIFEST', value: MANIFEST, meaning: '0x44×32: the environment manifest' },
  { name: 'ROOT_B', value: ROOT_B, meaning: '0x55×32: a forked root' },
  { name: 'MANIFEST_B', value: MANIFEST_B, meaning: '0x66×32: a different manifest' },
  { name: 'MEMORY_B', value: MEMORY_B, meaning: '0x77×32: a different memory image' },
  { name: 'ZEROS', value: ZEROS, meaning: '0x00×32: a head no record has' },
];
