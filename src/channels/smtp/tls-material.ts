import { X509Certificate, createPrivateKey } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../../config/config.js';
import { selfSignedCertificate } from './self-signed-cert.js';

export interface TlsMaterial {
  cert: string;
  key: string;
  source: 'configured' | 'generated';
}

const pem = (value: string): string =>
  value.trimStart().startsWith('-----BEGIN') ? value : readFileSync(value, 'utf8');

/**
 * The STARTTLS certificate: SMTP_TLS_CERT/SMTP_TLS_KEY (PEM paths, as a mounted Kubernetes
 * Secret provides them, or PEM text), else a self-signed one generated into
 * `<data dir>/smtp-tls/` on first start and reused afterwards. Half a configuration, an
 * unreadable file or a key that does not match the certificate stops start-up: falling back
 * silently would leave submission without the TLS its AUTH depends on.
 */
export async function loadTlsMaterial(config: Readonly<Config>, hostname: string): Promise<TlsMaterial> {
  if (config.SMTP_TLS_CERT || config.SMTP_TLS_KEY) {
    if (!config.SMTP_TLS_CERT || !config.SMTP_TLS_KEY)
      throw new Error('SMTP_TLS_CERT and SMTP_TLS_KEY must be set together');
    let cert: string;
    let key: string;
    try {
      cert = pem(config.SMTP_TLS_CERT);
      key = pem(config.SMTP_TLS_KEY);
    } catch (err) {
      throw new Error(`cannot read SMTP_TLS_CERT/SMTP_TLS_KEY: ${(err as Error).message}`, { cause: err });
    }
    assertPair(cert, key, 'SMTP_TLS_CERT/SMTP_TLS_KEY');
    return { cert, key, source: 'configured' };
  }
  const dir = path.join(config.dataDir, 'smtp-tls');
  const certFile = path.join(dir, 'cert.pem');
  const keyFile = path.join(dir, 'key.pem');
  if (!existsSync(certFile) || !existsSync(keyFile)) {
    const made = await selfSignedCertificate(hostname);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(keyFile, made.keyPem, { mode: 0o600 });
    writeFileSync(certFile, made.certPem, { mode: 0o644 });
  }
  const cert = readFileSync(certFile, 'utf8');
  const key = readFileSync(keyFile, 'utf8');
  assertPair(cert, key, certFile);
  return { cert, key, source: 'generated' };
}

function assertPair(cert: string, key: string, what: string): void {
  try {
    if (!new X509Certificate(cert).checkPrivateKey(createPrivateKey(key)))
      throw new Error('the key does not belong to the certificate');
  } catch (err) {
    throw new Error(`invalid SMTP TLS material in ${what}: ${(err as Error).message}`, { cause: err });
  }
}
