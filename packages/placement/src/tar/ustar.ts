// ustar headers and pax records, written from POSIX.1-2001 (pax) into plain byte blocks. The field
// choices are those of tar-stream's encoder — the reference the writer is tested against byte for
// byte — so the bytes equal what that well-kept library writes for the same headers.

const BLOCK = 512;
const encoder = new TextEncoder();

/** Two zero blocks end an archive. */
export const END_OF_ARCHIVE_LENGTH = 2 * BLOCK;

export const TYPEFLAG = { file: 0x30, symlink: 0x32, directory: 0x35, pax: 0x78 } as const;

function put(block: Uint8Array, text: string, offset: number): void {
  block.set(encoder.encode(text), offset);
}

/** Octal fields, the magic: ASCII, written without an encoder. */
function putAscii(block: Uint8Array, text: string, offset: number): void {
  for (let i = 0; i < text.length; i++) block[offset + i] = text.charCodeAt(i);
}

/** `width` octal digits and a space (all sevens when the value does not fit). */
function octal(value: number, width: number): string {
  const digits = value.toString(8);
  return digits.length > width ? `${'7'.repeat(width)} ` : `${'0'.repeat(width - digits.length)}${digits} `;
}

function putSize(block: Uint8Array, size: number): void {
  if (size.toString(8).length <= 11) {
    putAscii(block, octal(size, 11), 124);
    return;
  }
  block[124] = 0x80; // base-256 for sizes past 8 GiB
  let n = size;
  for (let i = 11; i > 0; i--) {
    block[124 + i] = n & 0xff;
    n = Math.floor(n / 0x100);
  }
}

export interface UstarFields {
  readonly name: string;
  readonly prefix: string;
  readonly mode: number;
  readonly size: number;
  readonly typeflag: number;
  readonly linkname: string;
}

/** One 512-byte ustar header: uid/gid 0, mtime 0, no user or group names, device 0/0. */
export function ustarHeader(f: UstarFields): Uint8Array {
  const block = new Uint8Array(BLOCK);
  putAscii(block, f.name, 0); // ustarName admits ASCII names only
  putAscii(block, octal(f.mode & 0o7777, 6), 100);
  putAscii(block, octal(0, 6), 108);
  putAscii(block, octal(0, 6), 116);
  putSize(block, f.size);
  putAscii(block, octal(0, 11), 136);
  block[156] = f.typeflag;
  if (f.linkname) put(block, f.linkname, 157);
  putAscii(block, 'ustar\u000000', 257);
  putAscii(block, octal(0, 6), 329);
  putAscii(block, octal(0, 6), 337);
  if (f.prefix) putAscii(block, f.prefix, 345);
  let sum = 8 * 0x20; // the checksum field counts as eight spaces
  for (let i = 0; i < 148; i++) sum += block[i]!;
  for (let i = 156; i < BLOCK; i++) sum += block[i]!;
  putAscii(block, octal(sum, 6), 148);
  return block;
}

/** A name in ustar's name/prefix fields, or null when it needs a pax record (too long, or not ASCII). */
export function ustarName(path: string): { name: string; prefix: string } | null {
  if (encoder.encode(path).byteLength !== path.length) return null;
  let name = path;
  let prefix = '';
  while (name.length > 100) {
    const i = name.indexOf('/');
    if (i === -1) return null;
    prefix += prefix ? `/${name.slice(0, i)}` : name.slice(0, i);
    name = name.slice(i + 1);
  }
  return name.length > 100 || prefix.length > 155 ? null : { name, prefix };
}

/** A pax extended-header record, `<length> <key>=<value>\n`, its length counting itself. */
export function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  const len = encoder.encode(body).byteLength;
  let digits = String(len).length;
  if (len + digits >= 10 ** digits) digits++;
  return `${len + digits}${body}`;
}

/** Zero bytes after `size` bytes of data up to the next block boundary. */
export function paddingLength(size: number): number {
  const rest = size % BLOCK;
  return rest === 0 ? 0 : BLOCK - rest;
}

export function utf8Bytes(text: string): Uint8Array {
  return encoder.encode(text);
}

/** Blocks of an archive: bytes to copy, or a count of zero bytes. */
export type Part = Uint8Array | number;

/**
 * The blocks before an entry's data: its ustar header, preceded by a pax `path` (and `linkpath`) record when
 * the name does not fit ustar (or is not ASCII) or the link target is past 100 bytes.
 */
export function headerParts(e: {
  readonly name: string;
  readonly typeflag: number;
  readonly mode: number;
  readonly size: number;
  readonly linkname: string;
}): Part[] {
  const { name, typeflag, mode, size, linkname } = e;
  const fits = ustarName(name);
  if (fits && utf8Bytes(linkname).byteLength <= 100) {
    return [ustarHeader({ ...fits, mode, size, typeflag, linkname })];
  }
  const pax = utf8Bytes(paxRecord('path', name) + (linkname ? paxRecord('linkpath', linkname) : ''));
  const paxLink = linkname ? 'PaxHeader' : '';
  return [
    ustarHeader({
      name: 'PaxHeader',
      prefix: '',
      mode,
      size: pax.byteLength,
      typeflag: TYPEFLAG.pax,
      linkname: paxLink,
    }),
    pax,
    paddingLength(pax.byteLength),
    ustarHeader({ name: 'PaxHeader', prefix: '', mode, size, typeflag, linkname: paxLink }),
  ];
}
