// Whether a workspace snapshot holds anything but directories — read from its ustar headers alone, before
// the interval parses it for out/'s files. A command run's snapshot is usually `out/` and nothing in it
// (`true` writes no file): its tar is a few directory headers, and parsing it with readTar (tar-stream, its
// streams and entries) only to find no file cost the runner's thread ≈ 0.02–0.1 ms per interval (README,
// "Figures"). Conservative: anything this scan does not recognise — gzip, a bad checksum, a header that is
// not ustar, a directory with a size, any other entry type, bytes after the end — answers false, and the
// caller parses the archive as before. So `true` only where readTar would give directories only.

const BLOCK = 512;
const DIRECTORY = 0x35; // '5'

/** True when `bytes` is a plain ustar archive of directory entries only (then it has no file to upload). */
export function onlyDirectories(bytes: Uint8Array): boolean {
  if (bytes.length % BLOCK !== 0) return false;
  let o = 0;
  for (; o + BLOCK <= bytes.length; o += BLOCK) {
    if (zeroBlock(bytes, o)) break;
    if (!checksumOk(bytes, o)) return false;
    // "ustar\0" (POSIX) or "ustar " (GNU): both begin with the five letters.
    if (ascii(bytes, o + 257, 5) !== 'ustar') return false;
    if (bytes[o + 156] !== DIRECTORY) return false;
    if (octal(bytes, o + 124, 12) !== 0) return false;
  }
  // The end: zero blocks to the last byte (what follows the first zero block is never read as entries by
  // this scan, so anything there sends the archive to the full reader).
  for (; o < bytes.length; o += BLOCK) if (!zeroBlock(bytes, o)) return false;
  return true;
}

function zeroBlock(bytes: Uint8Array, o: number): boolean {
  for (let i = o; i < o + BLOCK; i++) if (bytes[i] !== 0) return false;
  return true;
}

function ascii(bytes: Uint8Array, o: number, n: number): string {
  let s = '';
  for (let i = o; i < o + n; i++) s += String.fromCharCode(bytes[i]!);
  return s;
}

/** An octal field (digits, ended by a space or NUL); NaN when it is not one (base-256 included). */
function octal(bytes: Uint8Array, o: number, n: number): number {
  let value = 0;
  let digits = 0;
  let i = o;
  while (i < o + n && bytes[i] === 0x20) i++; // leading spaces
  for (; i < o + n; i++) {
    const c = bytes[i]!;
    if (c === 0 || c === 0x20) break;
    if (c < 0x30 || c > 0x37) return Number.NaN;
    value = value * 8 + (c - 0x30);
    digits += 1;
  }
  return digits === 0 ? Number.NaN : value;
}

/** The header's checksum field equals the unsigned sum of its bytes, the field itself counted as spaces. */
function checksumOk(bytes: Uint8Array, o: number): boolean {
  const stored = octal(bytes, o + 148, 8);
  if (Number.isNaN(stored)) return false;
  let sum = 0;
  for (let i = o; i < o + BLOCK; i++) sum += i >= o + 148 && i < o + 156 ? 0x20 : bytes[i]!;
  return sum === stored;
}
