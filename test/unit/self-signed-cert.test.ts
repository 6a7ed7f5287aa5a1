import { X509Certificate, createPrivateKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { selfSignedCertificate } from '../../src/channels/smtp/self-signed-cert.js';

describe('self-signed SMTP certificate', () => {
  // The hand-written DER writer this replaced made 1 certificate in 256 unreadable to OpenSSL (a
  // non-minimal serial INTEGER); 300 certificates from the `selfsigned` package would catch a
  // regression of that kind with 69 % odds and every run adds more.
  it('is always a certificate OpenSSL loads, for its own key and host name, not a CA, valid ten years', async () => {
    const now = new Date();
    for (let i = 0; i < 300; i++) {
      const { certPem, keyPem } = await selfSignedCertificate('mail.test', now);
      const cert = new X509Certificate(certPem);
      expect(cert.checkPrivateKey(createPrivateKey(keyPem))).toBe(true);
      expect(cert.checkHost('mail.test')).toBe('mail.test');
      expect(cert.checkHost('other.test')).toBeUndefined();
      expect(cert.ca).toBe(false);
      expect(cert.subject).toBe('CN=mail.test');
      expect(cert.subjectAltName).toBe('DNS:mail.test');
      expect(cert.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
      expect(cert.verify(cert.publicKey)).toBe(true);
      expect(new Date(cert.validFrom).getTime()).toBeLessThanOrEqual(now.getTime());
      expect(new Date(cert.validTo).getTime()).toBeGreaterThan(now.getTime() + 3649 * 86_400_000);
    }
  }, 60_000); // 300 key pairs: about a second alone, more beside the other projects on 2 cores
});
