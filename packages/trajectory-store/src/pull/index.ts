export { type JsonlSourceOptions, JsonlTraceSource } from './jsonl-source.js';
export { materializePull, type PulledTrace, type TraceSource } from './trace-source.js';
