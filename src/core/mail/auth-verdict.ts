import type { Readable } from 'node:stream';
import { authenticate } from 'mailauth';
import type { DnsLookup } from '../delivery/dns-resolver.js';

/** SPF, DKIM and DMARC results of an inbound message, as stored on the message (`authResults`). */
export interface AuthVerdict {
  spf: { result: string; domain: string | null };
  dkim: { result: string; domain: string | null; selector: string | null; aligned: boolean }[];
  dmarc: { result: string; domain: string | null; policy: string | null };
  /** The RFC 8601 Authentication-Results header (and Received-SPF) mailauth produced. */
  headers: string;
}

export interface Connection {
  clientAddress: string;
  helo: string;
  mailFrom: string;
  receivedBy: string;
}

/**
 * Verifies SPF (RFC 7208), DKIM (RFC 6376) and DMARC (RFC 7489) with mailauth, through the
 * configured resolver. A verification that cannot complete (DNS down) is a `temperror` result,
 * never a refused message: the verdicts are information for the mailbox owner.
 */
export async function verifyAuthentication(raw: Readable, c: Connection, resolver: DnsLookup): Promise<AuthVerdict> {
  try {
    const r = await authenticate(raw, {
      ip: c.clientAddress,
      helo: c.helo,
      sender: c.mailFrom,
      mta: c.receivedBy,
      resolver,
      disableArc: true,
      disableBimi: true,
    });
    const spf = r.spf ? r.spf.status : null;
    const dmarc = r.dmarc ? r.dmarc.status : null;
    return {
      spf: { result: spf?.result ?? 'none', domain: r.spf ? ((r.spf as { domain?: string }).domain ?? null) : null },
      dkim: (r.dkim?.results ?? []).map((d) => ({
        result: d.status.result,
        domain: d.signingDomain ?? null,
        selector: d.selector ?? null,
        aligned: Boolean(d.status.aligned),
      })),
      dmarc: {
        result: dmarc?.result ?? 'none',
        domain: r.dmarc ? ((r.dmarc as { domain?: string }).domain ?? null) : null,
        policy: r.dmarc ? ((r.dmarc as { policy?: string }).policy ?? null) : null,
      },
      headers: r.headers,
    };
  } catch (err) {
    raw.resume();
    return {
      spf: { result: 'temperror', domain: null },
      dkim: [],
      dmarc: { result: 'temperror', domain: null, policy: null },
      headers: `X-Auth-Error: ${(err as Error).message}`,
    };
  }
}
