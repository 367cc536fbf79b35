// @everdict/headlog/testing — a log served over real HTTP for tests (not a feature): `TestLog` (an
// in-memory log with staged attacks) and `startTestLogServer` (the wire contract over node:http). Stands in
// for the control plane's `/log` routes, issue 18 §2, which are not built yet.
export {
  type LogViews,
  startTestLogServer,
  type TestLogServer,
  type TestLogServerOptions,
} from './server.js';
export { TestLog } from './test-log.js';
