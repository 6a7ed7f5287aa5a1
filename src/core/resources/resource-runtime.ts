import type { Services } from '../services.js';

/** Applies manifests from MAILBOX_RESOURCES_DIR at start and on change. (Being built.) */
export async function startResourceDirectory(_services: Services, _dir: string): Promise<{ stop(): Promise<void> }> {
  return { stop: async () => undefined };
}
