import type { Config } from '../../config/config.js';

/** `mailbox apply -f`: applies manifests once against the configured database. (Being built.) */
export async function applyManifestsOnce(_config: Readonly<Config>, _target: string): Promise<string> {
  throw new Error('mailbox apply is not built yet');
}
