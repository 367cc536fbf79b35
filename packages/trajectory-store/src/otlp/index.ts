export {
  type Attributes,
  type AttributeValue,
  decodeOtlpJson,
  decodeOtlpProtobuf,
  decodeOtlpRequest,
  encodeOtlpResponse,
  type OtlpSpan,
  type OtlpSpanEvent,
} from './otlp-decode.js';
export {
  groupSpans,
  ingestOtlp,
  type OtlpIngestOptions,
  type OtlpIngestResult,
  type SpanGroups,
  spanBatchKey,
} from './otlp-ingest.js';
export {
  jsonNestingDepth,
  MAX_ATTRIBUTE_JSON_DEPTH,
  nanosToIso,
  runIdOf,
  spansToDrafts,
} from './otlp-map.js';
