import { Readable } from 'node:stream';
import type { DnsLookup } from '../../base/net/dns-resolver.js';
import { loadMailAuth } from './mailauth-module.js';

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
export async function verifyAuthentication(
  raw: Readable | Buffer,
  c: Connection,
  resolver: DnsLookup,
): Promise<AuthVerdict> {
  const { authenticate } = await loadMailAuth();
  try {
    const r = await authenticate(await bodyOnlyIfSigned(raw), {
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
    if (!Buffer.isBuffer(raw)) raw.resume();
    return {
      spf: { result: 'temperror', domain: null },
      dkim: [],
      dmarc: { result: 'temperror', domain: null, policy: null },
      headers: `X-Auth-Error: ${(err as Error).message}`,
    };
  }
}

/** Header sections larger than this are passed on whole (RawGuard already refuses past 100 KiB). */
const MAX_HEADER_BYTES = 1024 * 1024;
const DKIM_SIGNATURE = /(?:^|\n)dkim-signature[ \t]*:/i;

/**
 * What mailauth needs to read. Without a DKIM-Signature field (ARC is disabled) no body hash is
 * computed, and SPF and DMARC read only the envelope and the header: the header section alone,
 * and the rest of `raw` is left unread (its tee branch is dropped). That spares a pass over every
 * byte of large unsigned mail. A signed message is read whole.
 */
async function bodyOnlyIfSigned(raw: Readable | Buffer): Promise<Readable | Buffer> {
  if (Buffer.isBuffer(raw)) {
    const end = raw.indexOf('\r\n\r\n');
    const signed = end === -1 || DKIM_SIGNATURE.test(raw.subarray(0, end).toString('latin1'));
    return signed ? raw : raw.subarray(0, end + 4);
  }
  const chunks = raw[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const head: Buffer[] = [];
  let bytes = 0;
  for (;;) {
    const next = await chunks.next();
    if (next.done) return Buffer.concat(head); // the message ended inside its header section
    head.push(next.value);
    bytes += next.value.length;
    const all = Buffer.concat(head);
    const end = all.indexOf('\r\n\r\n');
    if (end === -1 && bytes <= MAX_HEADER_BYTES) continue;
    if (end !== -1 && !DKIM_SIGNATURE.test(all.subarray(0, end).toString('latin1'))) {
      await chunks.return?.(); // destroys the branch; tee stops feeding it
      return all.subarray(0, end + 4);
    }
    const rest = { [Symbol.asyncIterator]: () => chunks };
    return Readable.from(
      (async function* () {
        yield all;
        yield* rest;
      })(),
      { objectMode: false },
    );
  }
}
