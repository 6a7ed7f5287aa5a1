import { generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';

// A minimal DER writer (ITU-T X.690) for the one structure we need: a self-signed X.509 v3
// certificate (RFC 5280 §4.1). Node can verify certificates but not issue them.
const tlv = (tag: number, ...content: Buffer[]): Buffer => {
  const body = Buffer.concat(content);
  const n = body.length;
  const len =
    n < 0x80
      ? Buffer.from([n])
      : (() => {
          const bytes: number[] = [];
          for (let v = n; v > 0; v >>= 8) bytes.unshift(v & 0xff);
          return Buffer.from([0x80 | bytes.length, ...bytes]);
        })();
  return Buffer.concat([Buffer.from([tag]), len, body]);
};
const seq = (...c: Buffer[]) => tlv(0x30, ...c);
const set = (...c: Buffer[]) => tlv(0x31, ...c);
const explicit = (n: number, ...c: Buffer[]) => tlv(0xa0 + n, ...c);
const integer = (bytes: Buffer) => tlv(0x02, bytes[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes);
const utf8 = (s: string) => tlv(0x0c, Buffer.from(s, 'utf8'));
const octets = (b: Buffer) => tlv(0x04, b);
const bits = (b: Buffer) => tlv(0x03, Buffer.from([0]), b);
const bool = (v: boolean) => tlv(0x01, Buffer.from([v ? 0xff : 0]));
function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number);
  const out = [a! * 40 + b!];
  for (const arc of rest) {
    const chunk: number[] = [];
    for (let v = arc; ; v = Math.floor(v / 128)) {
      chunk.unshift((v % 128) | (chunk.length ? 0x80 : 0));
      if (v < 128) break;
    }
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}
/** UTCTime before 2050, GeneralizedTime from then on (RFC 5280 §4.1.2.5). */
function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14) + 'Z';
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(iso.slice(2))) : tlv(0x18, Buffer.from(iso));
}

const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));

/**
 * A self-signed ECDSA P-256 certificate for `hostname`, valid for ten years, with the name as
 * CN and subjectAltName (clients check the SAN, RFC 6125). Submission clients must be told to
 * trust it or configured with a real certificate (SMTP_TLS_CERT/SMTP_TLS_KEY).
 */
export function selfSignedCertificate(hostname: string, now = new Date()): { certPem: string; keyPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const name = seq(set(seq(oid('2.5.4.3'), utf8(hostname))));
  const serial = randomBytes(16);
  // Positive and with a non-zero first byte: a DER INTEGER must be minimal, and a leading 0x00
  // before a byte < 0x80 is "illegal padding" to OpenSSL (1 certificate in 256 failed to load).
  serial[0] = (serial[0]! & 0x7f) | 0x40;
  const notAfter = new Date(now.getTime() + 3650 * 86_400_000);
  const san = seq(tlv(0x82, Buffer.from(hostname, 'ascii')));
  const extensions = explicit(
    3,
    seq(
      seq(oid('2.5.29.19'), bool(true), octets(seq())), // basicConstraints: not a CA
      seq(oid('2.5.29.17'), octets(san)),
    ),
  );
  const tbs = seq(
    explicit(0, integer(Buffer.from([2]))),
    integer(serial),
    ECDSA_SHA256,
    name,
    seq(time(new Date(now.getTime() - 3_600_000)), time(notAfter)),
    name,
    spki(publicKey),
    extensions,
  );
  const signature = sign('sha256', tbs, { key: privateKey, dsaEncoding: 'der' });
  const der = seq(tbs, ECDSA_SHA256, bits(signature));
  const certPem = `-----BEGIN CERTIFICATE-----\n${der.toString('base64').replace(/.{1,64}/g, '$&\n')}-----END CERTIFICATE-----\n`;
  return { certPem, keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
}

const spki = (publicKey: KeyObject): Buffer => publicKey.export({ type: 'spki', format: 'der' });
