// What a start did to tenant `default`, said twice: a JSON log line (for log collectors) and, when a key
// was generated, a plain block on stderr a newcomer can copy — stdout stays JSON lines only.
import type { BootstrapOutcome } from '../services/index.js';
import type { Logger } from './logger.js';

/** The copy-paste line the README quickstart starts from. */
export function exportLine(baseUrl: string, key: string): string {
  return `export EVERDICT=${baseUrl} KEY=${key}`;
}

export function announceBootstrap(
  log: Logger,
  outcome: BootstrapOutcome | null,
  baseUrl: string,
  write: (text: string) => void = (text) => process.stderr.write(text),
): void {
  if (!outcome) return;
  const tenant = outcome.tenantId;
  if (outcome.generatedKey) {
    // The one time this key is ever shown: only its hash is stored.
    log.info({ tenant, bootstrapApiKey: outcome.generatedKey }, 'bootstrap admin key generated');
    write(
      [
        '',
        `  Everdict control plane listening on ${baseUrl}`,
        `  Admin key of tenant "${tenant}" (shown this once; only its hash is stored). Copy this line:`,
        '',
        `    ${exportLine(baseUrl, outcome.generatedKey)}`,
        '',
        '',
      ].join('\n'),
    );
  } else if (outcome.keyCreated) {
    log.info({ tenant }, 'bootstrap admin key from EVERDICT_BOOTSTRAP_API_KEY installed');
  } else {
    log.info(
      { tenant, tenantCreated: outcome.tenantCreated },
      'tenant default exists with an admin key; no new key (keys are shown once: set ' +
        'EVERDICT_BOOTSTRAP_API_KEY, or create one with POST /api-keys)',
    );
    write(`  Tenant "${tenant}" already has an admin key (printed on its first start); no new key.\n`);
  }
}
