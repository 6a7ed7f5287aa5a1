import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import type { Config } from '../../../config/config.js';
import type { Database } from '../../../storage/database.js';
import type { BlobStore } from '../../../storage/blobs/blob-store.js';
import type { Logger } from '../../base/logger.js';
import type { Clock } from '../../base/time.js';
import type { TokenAuthenticator } from '../../access/token-authenticator.js';
import type { TokenCipher } from '../../access/token-cipher.js';
import type { SendService } from '../sending/send.service.js';
import type { InboundStore } from '../inbound/inbound.store.js';
import type { EventBus } from '../../../storage/event-bus.js';
import type { OutboundPolicy } from '../policy/outbound-policy.js';
import { SubmissionService } from '../submission/submission.service.js';
import { InboundService } from '../inbound/inbound.service.js';
import { InboundDelivery } from '../inbound/inbound-delivery.js';
import { hostedDkimLookup } from '../inbound/hosted-dkim.js';
import { dnsResolver, type DnsLookup } from '../../base/net/dns-resolver.js';
import { DkimKeys } from '../outbound/dkim-keys.js';
import { externalTransportFrom, type ExternalTransport } from '../outbound/external-transport.js';
import { CommitGroup } from '../../../storage/commit-group.js';
import { FLOW_SAMPLE_MS, IntakeFlow } from '../intake/intake-flow.js';
import { pendingRows, type IntakeQueueTable } from '../intake/intake-queue.store.js';

/** The mail-transport use cases: SMTP submission, inbound MX, DKIM keys and external delivery. */
export interface MailTransport {
  submission: SubmissionService;
  inbound: InboundService;
  /** DNS_SERVERS, or the system resolver: SPF/DKIM/DMARC and MX lookups. */
  resolver: DnsLookup;
  dkim: DkimKeys;
  /** Null when external delivery is off (SMTP_DELIVERY=none): external recipients wait queued. */
  external: ExternalTransport | null;
  /** SMTP_HOSTNAME or the host name: greetings, Received headers, EHLO when delivering, bounces. */
  hostname: string;
}

export interface MailTransportDeps {
  config: Readonly<Config>;
  log: Logger;
  clock: Clock;
  db: Database;
  blobs: BlobStore;
  bus: EventBus;
  redis: Redis | null;
  cipher: TokenCipher;
  tokenAuth: TokenAuthenticator;
  sending: SendService;
  inbound: InboundStore;
  policy: OutboundPolicy;
}

export function createMailTransport(d: MailTransportDeps): MailTransport {
  const resolver = dnsResolver(d.config.DNS_SERVERS, d.config.DNS_CACHE_TTL);
  const hostname = smtpHostname(d.config);
  // One group for both listeners: submissions and inbound messages arriving together share a commit.
  const group = d.config.SMTP_GROUP_COMMIT ? new CommitGroup(d.db) : null;
  const flowOf = (table: IntakeQueueTable, queued: boolean) => {
    const highWater = d.config.SMTP_QUEUE_HIGH_WATER;
    return queued
      ? new IntakeFlow(pendingRows(d.db, table, highWater), {
          highWater,
          delayMs: d.config.SMTP_IN_FLOW_DELAY,
          sampleMs: FLOW_SAMPLE_MS,
        })
      : null;
  };
  return {
    resolver,
    hostname,
    dkim: new DkimKeys(d.db, d.cipher, d.clock),
    external: externalTransportFrom(d.config, resolver, hostname, d.log),
    inbound: new InboundService(
      d.db,
      new InboundDelivery(d.db, d.blobs, d.inbound, d.bus, d.log, hostedDkimLookup(d.db, resolver), {
        hostname,
        group,
      }),
      d.clock,
      d.log,
      {
        maxRecipients: d.config.MAX_RECIPIENTS,
        group,
        queue: d.config.SMTP_INBOUND_QUEUE,
        directBelow: d.config.SMTP_INBOUND_DIRECT_BELOW,
        flow: flowOf('inbound_queue', d.config.SMTP_INBOUND_QUEUE),
      },
    ),
    submission: new SubmissionService(
      d.db,
      d.tokenAuth,
      d.sending,
      d.blobs,
      d.log,
      {
        maxRecipients: d.config.MAX_RECIPIENTS,
        group,
        queue: d.config.SMTP_SUBMISSION_QUEUE,
        senderCacheMs: d.config.AUTH_CACHE_TTL,
        flow: flowOf('submission_queue', d.config.SMTP_SUBMISSION_QUEUE),
      },
      d.policy,
      d.clock,
    ),
  };
}

/** The name this server uses in greetings, Received headers and bounces. */
export const smtpHostname = (config: Readonly<Config>): string => config.SMTP_HOSTNAME ?? hostname();
