import { describeAdmissionStoreContract } from '../contract.js';
import { MemoryAdmissionStore } from './index.js';

describeAdmissionStoreContract('memory', () => new MemoryAdmissionStore());
