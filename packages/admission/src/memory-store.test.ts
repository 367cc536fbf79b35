import { describeAdmissionStoreContract } from './contract.js';
import { MemoryAdmissionStore } from './memory-store.js';

describeAdmissionStoreContract('memory', () => new MemoryAdmissionStore());
