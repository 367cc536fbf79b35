import { KNOWN_RUN_KINDS, RUN_STATUSES, RunLifetime } from '@everdict/run-model';
import { CliError } from '../errors.js';

// The flags' help names the run vocabulary as run-model has it (a help that named a lifetime `service` no
// version knew is how it drifted).
/** `--kind`: the kinds run-model knows, and any other a runner may take. */
export const KINDS_HELP = [...KNOWN_RUN_KINDS, '…'].join(' | ');
/** `--status`: every status a run may have. */
export const STATUSES_HELP = RUN_STATUSES.join(' | ');
/** `--lifetime`: every lifetime. */
export const LIFETIMES_HELP = RunLifetime.options.join(' | ');

export function parseJsonOption(name: string, text: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new CliError('usage', `${name} is not JSON`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new CliError('usage', `${name} is a JSON object`);
  return v as Record<string, unknown>;
}

/** Any JSON value (an eval case's answer key: an object, a string, a number, …). */
export function parseJsonValue(name: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new CliError('usage', `${name} is not JSON`);
  }
}

export function parseJsonArray(name: string, text: string): unknown[] {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new CliError('usage', `${name} is not JSON`);
  }
  return Array.isArray(v) ? v : [v];
}

export const collect = (value: string, previous: string[] = []): string[] => [...previous, value];
