import type { Database } from '../../../storage/database.js';
import { deferredRecipients } from './delivery.store.js';
import { splitAddress } from '../../base/address.js';
import type { ExternalTransport, Outcome } from './external-transport.js';

/** The reserved domain (RFC 2606 `.invalid`) whose mail never leaves the service (docs/workflow.md). */
export const SIMULATOR_DOMAIN = 'simulator.invalid';

export const isSimulated = (address: string): boolean => splitAddress(address).domain === SIMULATOR_DOMAIN;

/** The replies the simulator gives, written like a real server's so stored replies read the same. */
export const SIMULATOR_REPLIES = {
  delivered: '250 2.0.0 Delivered (simulator.invalid)',
  bounce: '550 5.1.1 Simulated permanent failure: mailbox does not exist (simulator.invalid)',
  deferFirst: '451 4.3.0 Simulated temporary failure, try again later (simulator.invalid)',
  suppressed: '550 5.7.1 Recipient address is suppressed (simulator.invalid)',
  unknown: '550 5.1.1 Unknown simulator address; use delivered@, bounce@, defer@ or suppressed@ (simulator.invalid)',
} as const;

/**
 * A transport for `simulator.invalid` beside the real one: the outcome follows the local part,
 * and the rest (delivery records, events, retries, bounces, metrics) is the real path's, because
 * the worker hands these outcomes to the same code as an SMTP server's. Nothing is connected to.
 * `defer@` is deferred on its first attempt and delivered on the next: the recipient's stored
 * status says which attempt this is.
 */
export function simulatorTransport(db: Database, messageId: string): ExternalTransport {
  return {
    route: 'simulator',
    async deliver(_from, recipients): Promise<Outcome[]> {
      const deferredBefore = await deferredRecipients(db, messageId, recipients);
      return recipients.map((address) => outcomeFor(address, deferredBefore.has(address)));
    },
  };
}

function outcomeFor(address: string, deferredBefore: boolean): Outcome {
  switch (splitAddress(address).localPart.toLowerCase()) {
    case 'delivered':
      return { address, status: 'delivered', reply: SIMULATOR_REPLIES.delivered };
    case 'bounce':
      return { address, status: 'failed', reply: SIMULATOR_REPLIES.bounce };
    case 'defer':
      return deferredBefore
        ? { address, status: 'delivered', reply: SIMULATOR_REPLIES.delivered }
        : { address, status: 'deferred', reply: SIMULATOR_REPLIES.deferFirst };
    case 'suppressed':
      return { address, status: 'failed', reply: SIMULATOR_REPLIES.suppressed };
    default:
      return { address, status: 'failed', reply: SIMULATOR_REPLIES.unknown };
  }
}
