// @everdict/placement-kubernetes — the Kubernetes placement driver.
export * from './quantity.js';
