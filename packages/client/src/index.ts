// @everdict/client — the typed HTTP client of the control plane (types generated at build time from its
// OpenAPI document; openapi-fetch underneath), and its one error, ClientError.
export {
  type ClientOptions,
  type components,
  createClient,
  dataOf,
  type EverdictClient,
  type paths,
} from './client.js';
export {
  CLIENT_ERROR_CODES,
  ClientError,
  errorFromResponse,
  isClientError,
  Problem,
  parseRetryAfter,
} from './errors.js';
