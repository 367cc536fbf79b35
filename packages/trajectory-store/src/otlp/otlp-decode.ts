// OTLP/HTTP ExportTraceServiceRequest → one normalized shape, from JSON (hex ids, enums as numbers or
// names, 64-bit integers as strings or numbers) or from protobuf (decoded by protobufjs, ids as bytes).
// Both forms of the same spans decode to identical OtlpSpans.
import { z } from 'zod';
import { parseOrThrow, TrajectoryStoreError } from '../errors.js';
import { MAX_ATTRIBUTE_JSON_DEPTH } from './otlp-map.js';
import { exportRequestType, exportResponseType } from './otlp-proto.js';

export type AttributeValue =
  | string
  | number
  | boolean
  | null
  | AttributeValue[]
  | { [key: string]: AttributeValue };
export type Attributes = Record<string, AttributeValue>;

export interface OtlpSpanEvent {
  readonly name: string;
  readonly timeUnixNano: string;
  readonly attributes: Attributes;
}

export interface OtlpSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly name: string;
  readonly kind: number;
  readonly startTimeUnixNano: string;
  readonly endTimeUnixNano: string;
  readonly attributes: Attributes;
  readonly events: OtlpSpanEvent[];
  readonly status: { readonly code: number; readonly message?: string };
  readonly resource: Attributes;
  readonly scope?: { readonly name: string; readonly version?: string };
}

const SPAN_KINDS = ['UNSPECIFIED', 'INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER'];
const STATUS_CODES = ['UNSET', 'OK', 'ERROR'];

const Uint64 = z.union([z.string().regex(/^\d{1,20}$/), z.int().nonnegative()]).transform(String);
const Enum = (names: string[], prefix: string) =>
  z.union([
    z.int().nonnegative(),
    z
      .string()
      .transform((s) => names.indexOf(s.startsWith(prefix) ? s.slice(prefix.length) : s))
      .pipe(z.int().nonnegative()),
  ]);

type RawValue = {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number | string;
  bytesValue?: string;
  arrayValue?: { values?: RawValue[] };
  kvlistValue?: { values?: RawKeyValue[] };
};
type RawKeyValue = { key: string; value?: RawValue };

const AnyValue: z.ZodType<RawValue> = z.lazy(() =>
  z.looseObject({
    stringValue: z.string().optional(),
    boolValue: z.boolean().optional(),
    intValue: z.union([z.string().regex(/^-?\d{1,20}$/), z.int()]).optional(),
    doubleValue: z.union([z.number(), z.string()]).optional(),
    bytesValue: z.string().optional(),
    arrayValue: z.looseObject({ values: z.array(AnyValue).optional() }).optional(),
    kvlistValue: z.looseObject({ values: z.array(KeyValue).optional() }).optional(),
  }),
);
const KeyValue: z.ZodType<RawKeyValue> = z.lazy(() =>
  z.looseObject({ key: z.string(), value: AnyValue.optional() }),
);
const Attrs = z.array(KeyValue).optional();

const RawSpan = z.looseObject({
  traceId: z.string(),
  spanId: z.string(),
  parentSpanId: z.string().optional(),
  name: z.string(),
  kind: Enum(SPAN_KINDS, 'SPAN_KIND_').optional(),
  startTimeUnixNano: Uint64,
  endTimeUnixNano: Uint64,
  attributes: Attrs,
  events: z.array(z.looseObject({ name: z.string(), timeUnixNano: Uint64, attributes: Attrs })).optional(),
  status: z
    .looseObject({ code: Enum(STATUS_CODES, 'STATUS_CODE_').optional(), message: z.string().optional() })
    .optional(),
});

const RawRequest = z.looseObject({
  resourceSpans: z
    .array(
      z.looseObject({
        resource: z.looseObject({ attributes: Attrs }).optional(),
        scopeSpans: z
          .array(
            z.looseObject({
              scope: z
                .looseObject({ name: z.string().optional(), version: z.string().optional() })
                .optional(),
              spans: z.array(RawSpan).optional(),
            }),
          )
          .optional(),
      }),
    )
    .optional(),
});

function value(v: RawValue | undefined): AttributeValue {
  if (!v) return null;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) {
    const n = Number(v.intValue);
    return Number.isSafeInteger(n) ? n : String(v.intValue);
  }
  if (v.doubleValue !== undefined)
    return typeof v.doubleValue === 'number' ? v.doubleValue : String(v.doubleValue);
  if (v.bytesValue !== undefined) return v.bytesValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(value);
  if (v.kvlistValue) return attributes(v.kvlistValue.values);
  return null;
}

/**
 * An attribute map with no prototype, every key an own property: `__proto__` (or `constructor`) is an attribute
 * like any other — assigned on a plain `{}` it would replace the map's prototype, lose the attribute, and let its
 * value answer the mapping's look-ups (`gen_ai.operation.name`, `everdict.run_id`). A repeated key: the last wins.
 */
function attributes(kvs: RawKeyValue[] | undefined): Attributes {
  const out = Object.create(null) as Attributes;
  for (const kv of kvs ?? [])
    Object.defineProperty(out, kv.key, {
      value: value(kv.value),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  return out;
}

/**
 * Refuses (400) a request with an AnyValue nested deeper than MAX_ATTRIBUTE_JSON_DEPTH `arrayValue` /
 * `kvlistValue` levels — the bound attribute text gets — walked without recursion, before anything walks it
 * recursively (protobufjs's toObject, the schema, the conversion, canonical JSON): nested past the stack,
 * those would overflow it. protobufjs's own recursion limit is a process-wide setting, not this bound.
 */
function checkValueDepth(request: unknown): void {
  const stack: [unknown, number][] = [[request, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (Array.isArray(node)) {
      for (const item of node) if (item !== null && typeof item === 'object') stack.push([item, depth]);
      continue;
    }
    if (node === null || typeof node !== 'object' || ArrayBuffer.isView(node)) continue;
    for (const key of Object.keys(node as object)) {
      const child = (node as Record<string, unknown>)[key];
      if (child === null || typeof child !== 'object') continue;
      const below = key === 'arrayValue' || key === 'kvlistValue' ? depth + 1 : depth;
      if (below > MAX_ATTRIBUTE_JSON_DEPTH)
        throw new TrajectoryStoreError(
          'bad_request',
          `an OTLP attribute value nests deeper than ${MAX_ATTRIBUTE_JSON_DEPTH} levels`,
        );
      stack.push([child, below]);
    }
  }
}

function id(
  raw: string | undefined,
  bytes: number,
  encoding: 'hex' | 'base64',
  what: string,
): string | undefined {
  if (raw === undefined || (raw === '' && what === 'parentSpanId')) return undefined; // a root span
  const hex = encoding === 'hex' ? raw.toLowerCase() : Buffer.from(raw, 'base64').toString('hex');
  if (!new RegExp(`^[0-9a-f]{${bytes * 2}}$`).test(hex) || /^0+$/.test(hex))
    throw new TrajectoryStoreError('bad_request', `invalid OTLP ${what}: ${raw}`);
  return hex;
}

/**
 * A span that ends before it starts is `bad_request` (the request is refused, nothing stored) — for every kind
 * of span and in both encodings, decided here where both meet (a negative latency or a result before its call
 * is no observation). A span ending when it starts is fine.
 */
function checkTimes(start: string, end: string, traceId: string, spanId: string): void {
  if (BigInt(end) < BigInt(start))
    throw new TrajectoryStoreError(
      'bad_request',
      `OTLP span ${spanId} ends (${end}) before it starts (${start})`,
      { traceId, spanId, startTimeUnixNano: start, endTimeUnixNano: end },
    );
}

function normalize(input: unknown, encoding: 'hex' | 'base64'): OtlpSpan[] {
  const req = parseOrThrow(RawRequest, input, 'OTLP ExportTraceServiceRequest');
  const spans: OtlpSpan[] = [];
  for (const rs of req.resourceSpans ?? []) {
    const resource = attributes(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      const scope = ss.scope?.name
        ? { name: ss.scope.name, ...(ss.scope.version ? { version: ss.scope.version } : {}) }
        : undefined;
      for (const s of ss.spans ?? []) {
        const parent = id(s.parentSpanId, 8, encoding, 'parentSpanId');
        const traceId = id(s.traceId, 16, encoding, 'traceId')!;
        const spanId = id(s.spanId, 8, encoding, 'spanId')!;
        checkTimes(s.startTimeUnixNano, s.endTimeUnixNano, traceId, spanId);
        spans.push({
          traceId,
          spanId,
          ...(parent ? { parentSpanId: parent } : {}),
          name: s.name,
          kind: s.kind ?? 0,
          startTimeUnixNano: s.startTimeUnixNano,
          endTimeUnixNano: s.endTimeUnixNano,
          attributes: attributes(s.attributes),
          events: (s.events ?? []).map((e) => ({
            name: e.name,
            timeUnixNano: e.timeUnixNano,
            attributes: attributes(e.attributes),
          })),
          status: { code: s.status?.code ?? 0, ...(s.status?.message ? { message: s.status.message } : {}) },
          resource,
          ...(scope ? { scope } : {}),
        });
      }
    }
  }
  return spans;
}

/** Decodes an OTLP/HTTP JSON body (`application/json`). */
export function decodeOtlpJson(body: string | Uint8Array | unknown): OtlpSpan[] {
  let parsed = body;
  if (typeof body === 'string' || body instanceof Uint8Array) {
    try {
      parsed = JSON.parse(typeof body === 'string' ? body : Buffer.from(body).toString('utf8'));
    } catch {
      throw new TrajectoryStoreError('bad_request', 'the OTLP JSON body is not JSON');
    }
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new TrajectoryStoreError(
      'bad_request',
      'the OTLP JSON body is not an ExportTraceServiceRequest object',
    );
  checkValueDepth(parsed);
  return normalize(parsed, 'hex');
}

/** Decodes an OTLP/HTTP protobuf body (`application/x-protobuf`). */
export function decodeOtlpProtobuf(body: Uint8Array): OtlpSpan[] {
  const type = exportRequestType();
  let message: ReturnType<typeof type.decode>;
  try {
    message = type.decode(body);
  } catch (err) {
    throw new TrajectoryStoreError(
      'bad_request',
      `the OTLP protobuf body does not decode: ${(err as Error).message}`,
    );
  }
  checkValueDepth(message);
  // `json: true`: a NaN or ±Infinity double becomes "NaN" / "Infinity" / "-Infinity", as OTLP/JSON writes it,
  // so the same spans decode identically from both encodings (a non-finite double is a legal attribute).
  return normalize(
    type.toObject(message, { longs: String, enums: Number, bytes: String, json: true }),
    'base64',
  );
}

/** Decodes by content type: `application/x-protobuf` or `application/json` (parameters ignored). */
export function decodeOtlpRequest(contentType: string | undefined, body: Uint8Array): OtlpSpan[] {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/x-protobuf' || type === 'application/protobuf') return decodeOtlpProtobuf(body);
  if (type === 'application/json') return decodeOtlpJson(body);
  throw new TrajectoryStoreError(
    'bad_request',
    `OTLP bodies are application/x-protobuf or application/json, not ${type || 'untyped'}`,
  );
}

/** The ExportTraceServiceResponse to answer with, in the request's encoding. */
export function encodeOtlpResponse(
  format: 'json' | 'protobuf',
  partial?: { rejectedSpans: number; errorMessage: string },
): Uint8Array {
  const body = partial
    ? { partialSuccess: { rejectedSpans: String(partial.rejectedSpans), errorMessage: partial.errorMessage } }
    : {};
  if (format === 'json') return Buffer.from(JSON.stringify(body));
  const type = exportResponseType();
  return type.encode(type.fromObject(body)).finish();
}
