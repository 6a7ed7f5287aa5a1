import { X509Certificate, createPrivateKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { selfSignedCertificate } from '../../src/channels/smtp/self-signed-cert.js';

describe('self-signed SMTP certificate', () => {
  // The serial is random: a non-minimal DER INTEGER (a needless leading 0x00) made 1 certificate in
  // 256 unreadable to OpenSSL ("illegal padding"). 1 000 certificates catch that with 98 % odds.
  it('is always valid DER that OpenSSL loads, for its own key and host name', () => {
    const now = new Date();
    for (let i = 0; i < 1000; i++) {
      const { certPem, keyPem } = selfSignedCertificate('mail.test', now);
      const cert = new X509Certificate(certPem);
      expect(cert.checkPrivateKey(createPrivateKey(keyPem))).toBe(true);
      expect(cert.checkHost('mail.test')).toBe('mail.test');
      expect(cert.serialNumber).toMatch(/^[4-7][0-9A-F]{31}$/);
    }
  });
});
