export { JsonlTraceSource, type JsonlSourceOptions } from './jsonl-source.js';
export { materializePull, type PulledTrace, type TraceSource } from './trace-source.js';
