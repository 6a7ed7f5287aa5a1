import type { Config } from '../../../config/config.js';
import type { Logger } from '../../base/logger.js';
import { asciiDomain, splitAddress } from '../../base/address.js';
import { hostAddresses, mxHosts, type DnsLookup } from '../../base/net/dns-resolver.js';
import { smtpSend, type OutgoingMessage, type Outcome, type SmtpTarget } from './smtp-send.js';
import { partitionTargets, type NetworkTargetPolicy } from '../../base/net/network-targets.js';

export type { OutgoingMessage, Outcome } from './smtp-send.js';

/** Sends one message to external recipients; every recipient comes back with an outcome. */
export interface ExternalTransport {
  /** `simulator`: the in-process transport of simulator.invalid (simulator-transport.ts). */
  readonly route: 'relay' | 'mx' | 'simulator';
  deliver(from: string, recipients: string[], message: OutgoingMessage, signal?: AbortSignal): Promise<Outcome[]>;
}

/**
 * The configured transport: SMTP_DELIVERY=relay (default when SMTP_RELAY_URL is set) sends every
 * external recipient through the relay in one transaction; `mx` looks up each recipient domain's
 * MX (RFC 5321 §5.1) and talks to it directly; `none` (default without a relay) keeps external
 * recipients queued.
 */
export function externalTransportFrom(
  config: Readonly<Config>,
  resolver: DnsLookup,
  helo: string,
  log: Logger,
): ExternalTransport | null {
  const mode = config.SMTP_DELIVERY ?? (config.SMTP_RELAY_URL ? 'relay' : 'none');
  if (mode === 'none') return null;
  if (mode === 'relay') {
    if (!config.SMTP_RELAY_URL) throw new Error('SMTP_DELIVERY=relay needs SMTP_RELAY_URL');
    const target = relayTarget(config.SMTP_RELAY_URL);
    return {
      route: 'relay',
      deliver: async (from, to, message, signal) =>
        (await smtpSend(target, helo, { from, to }, message, signal)).outcomes,
    };
  }
  const policy: NetworkTargetPolicy = { allowPrivate: config.ALLOW_PRIVATE_NETWORK_TARGETS };
  return {
    route: 'mx',
    deliver: (from, to, message, signal) =>
      viaMx(resolver, policy, config.SMTP_DELIVERY_PORT, helo, from, to, message, log, signal),
  };
}

/** smtp://user:pass@host:port (STARTTLS when offered) or smtps://… (implicit TLS, port 465). */
export function relayTarget(url: string): SmtpTarget {
  const u = new URL(url);
  if (u.protocol !== 'smtp:' && u.protocol !== 'smtps:') throw new Error('SMTP_RELAY_URL must be smtp:// or smtps://');
  const secure = u.protocol === 'smtps:';
  return {
    host: u.hostname.replace(/^\[|\]$/g, ''),
    port: Number(u.port || (secure ? 465 : 587)),
    secure,
    // ?tls=insecure accepts a relay's self-signed certificate (a sidecar relay, tests).
    rejectUnauthorized: u.searchParams.get('tls') !== 'insecure',
    ...(u.username ? { auth: { user: decodeURIComponent(u.username), pass: decodeURIComponent(u.password) } } : {}),
  };
}

/**
 * Direct delivery, per recipient domain: MX hosts by preference, each host's addresses in turn,
 * moving on only while no server answered at all. TLS is opportunistic and unverified, as for
 * any MX without MTA-STS or DANE. The MX names are the recipient domain's to choose, so only
 * public addresses are connected to (docs/api.md, "Network targets"): a domain whose MX hosts
 * resolve to loopback, private, link-local or metadata addresses only fails for good (5.4.4),
 * and its stored reply names no address.
 */
async function viaMx(
  resolver: DnsLookup,
  policy: NetworkTargetPolicy,
  port: number,
  helo: string,
  from: string,
  recipients: string[],
  message: OutgoingMessage,
  log: Logger,
  signal?: AbortSignal,
): Promise<Outcome[]> {
  const byDomain = new Map<string, string[]>();
  for (const r of recipients)
    byDomain.set(splitAddress(r).domain, [...(byDomain.get(splitAddress(r).domain) ?? []), r]);
  const outcomes: Outcome[] = [];
  for (const [domain, to] of byDomain) {
    const all = (status: Outcome['status'], reply: string) => to.map((address) => ({ address, status, reply }));
    let hosts: string[] | 'null-mx';
    try {
      hosts = await mxHosts(resolver, asciiDomain(domain) || domain);
    } catch (err) {
      // RFC 3463: X.1.2 bad destination system; X.4.3 directory (DNS) failure is temporary.
      outcomes.push(
        ...((err as { permanent?: boolean }).permanent
          ? all('failed', `550 5.1.2 ${domain}: no such domain`)
          : all('deferred', `451 4.4.3 ${domain}: DNS lookup failed`)),
      );
      continue;
    }
    if (hosts === 'null-mx') {
      outcomes.push(...all('failed', `556 5.1.10 ${domain} does not accept mail (null MX, RFC 7505)`));
      continue;
    }
    let result: Outcome[] = all('deferred', `451 4.4.4 ${domain}: no MX host reachable`);
    let refusedOnly = true;
    search: for (const host of hosts) {
      const resolved = await hostAddresses(resolver, host).catch(() => [] as string[]);
      const { permitted, refused } = partitionTargets(resolved, policy);
      if (refused.length) log.warn('delivery.mx_target_refused', { domain, host, addresses: refused });
      if (permitted.length || resolved.length === 0) refusedOnly = false;
      for (const address of permitted) {
        const sent = await smtpSend(
          { host: address, port, secure: false, servername: host, rejectUnauthorized: false },
          helo,
          { from, to },
          message,
          signal,
        );
        result = sent.outcomes;
        if (sent.connected || signal?.aborted) break search;
        log.info('delivery.mx_unreachable', { domain, host, address, reply: sent.outcomes[0]?.reply });
      }
    }
    // RFC 3463 X.4.4: unable to route. Permanent: retrying would only try the same addresses again.
    if (refusedOnly) result = all('failed', `550 5.4.4 ${domain}: its MX hosts have no public address`);
    outcomes.push(...result);
  }
  return outcomes;
}
