// Kubernetes resource quantities ("500m", "2", "128Mi", "1G", "1e3") as exact integers: CPU in
// millicores, everything else in base units. Shared by the driver (capacity from a ResourceQuota, the pod's
// disk quantities) and the test API server (quota admission and status).

const BINARY: Record<string, bigint> = {
  Ki: 1024n,
  Mi: 1024n ** 2n,
  Gi: 1024n ** 3n,
  Ti: 1024n ** 4n,
  Pi: 1024n ** 5n,
  Ei: 1024n ** 6n,
};
const DECIMAL: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const PATTERN = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$/;

/** `quantity × 10^scale`, rounded up (Kubernetes rounds requests up): scale 3 gives milli-units. */
export function parseQuantity(text: string, scale = 0): bigint | undefined {
  const match = PATTERN.exec(text.trim());
  if (!match) return undefined;
  const [, sign, number = '', suffix = ''] = match;
  const [whole = '', fraction = ''] = number.split('.');
  // value = digits × 10^-fraction.length × multiplier × 10^scale
  let digits = BigInt(`${whole || '0'}${fraction}`);
  let exponent = scale - fraction.length;
  if (suffix in BINARY) digits *= BINARY[suffix] as bigint;
  else if (/^[eE]/.test(suffix)) exponent += Number(suffix.slice(1));
  else exponent += DECIMAL[suffix] ?? 0;
  let value: bigint;
  if (exponent >= 0) value = digits * 10n ** BigInt(exponent);
  else {
    const divisor = 10n ** BigInt(-exponent);
    value = (digits + divisor - 1n) / divisor;
  }
  return sign === '-' ? -value : value;
}

/** CPU quantity in millicores. */
export function parseCpuMillis(text: string): bigint | undefined {
  return parseQuantity(text, 3);
}

/** The canonical text of a CPU amount in millicores ("2", "500m"). */
export function formatCpuMillis(millis: bigint): string {
  return millis % 1000n === 0n ? `${millis / 1000n}` : `${millis}m`;
}

/** The canonical text of a byte or count amount ("128Mi", "1Gi", "1500"). */
export function formatBytes(amount: bigint): string {
  if (amount === 0n) return '0';
  for (const suffix of ['Ei', 'Pi', 'Ti', 'Gi', 'Mi', 'Ki']) {
    const unit = BINARY[suffix] as bigint;
    if (amount % unit === 0n) return `${amount / unit}${suffix}`;
  }
  return `${amount}`;
}

/** Whether a quota resource name measures CPU (so its quantities are read in millicores). */
export function isCpuResource(name: string): boolean {
  return name === 'cpu' || name.endsWith('.cpu');
}

/** A quota or request quantity in its comparable integer unit: millicores for CPU, base units otherwise. */
export function parseResource(name: string, text: string): bigint | undefined {
  return isCpuResource(name) ? parseCpuMillis(text) : parseQuantity(text);
}

/** The canonical text of an amount produced by `parseResource`. */
export function formatResource(name: string, amount: bigint): string {
  return isCpuResource(name) ? formatCpuMillis(amount) : formatBytes(amount);
}
