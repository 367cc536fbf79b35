export { MemoryAdmissionStore } from './store.js';
