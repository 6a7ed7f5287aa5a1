import { generate } from 'selfsigned';

const TEN_YEARS_MS = 3650 * 86_400_000;

/**
 * A self-signed ECDSA P-256 certificate for `hostname` (the `selfsigned` package), valid for ten
 * years from an hour ago, with the name as CN and subjectAltName (clients check the SAN, RFC 6125).
 * Submission clients must be told to trust it or configured with a real certificate
 * (SMTP_TLS_CERT/SMTP_TLS_KEY).
 */
export async function selfSignedCertificate(
  hostname: string,
  now = new Date(),
): Promise<{ certPem: string; keyPem: string }> {
  const made = await generate([{ name: 'commonName', value: hostname }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: new Date(now.getTime() - 3_600_000),
    notAfterDate: new Date(now.getTime() + TEN_YEARS_MS),
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: hostname }] },
    ],
  });
  return { certPem: made.cert, keyPem: made.private };
}
