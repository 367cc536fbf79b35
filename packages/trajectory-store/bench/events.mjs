// The bench's events: the same mix the tests use (message, llm_call, tool_call, tool_result, log), made
// per batch so that no run holds more than one batch of them.
export { sampleEvents } from '../dist/fixtures.js';
