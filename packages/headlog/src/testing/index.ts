// @everdict/headlog/testing — a log served over real HTTP for tests (not a feature): `TestLog` (an
// in-memory log with staged attacks) and `startTestLogServer` (the wire contract over node:http). Stands in
// for the control plane's `/log` routes (issue 18 §2; apps/control-plane/src/http/log.ts) in this package's tests.
export {
  type LogViews,
  startTestLogServer,
  type TestLogServer,
  type TestLogServerOptions,
} from './server.js';
export { TestLog } from './test-log.js';
