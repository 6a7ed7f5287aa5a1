import { generateKeyPairSync } from 'node:crypto';
import type { Clock } from '../../base/time.js';
import type { TokenCipher } from '../../access/token-cipher.js';
import type { Principal } from '../../access/principal.js';
import { requireDomainToken, requireScope } from '../../access/access.js';
import type { Database } from '../../../storage/database.js';
import { dkimKeyOf, insertDkimKey } from './delivery.store.js';

export interface DkimKey {
  domain: string;
  selector: string;
  privateKeyPem: string;
  publicKey: string;
}

/** The DNS record a domain publishes so receivers can verify our signatures (RFC 6376 §3.6.1). */
export interface DkimRecord {
  domain: string;
  selector: string;
  name: string;
  type: 'TXT';
  value: string;
}

/**
 * One DKIM key per hosted domain (RSA 2048, rsa-sha256: what every receiver verifies; RFC 8301),
 * generated the first time the domain needs it. The private key is stored encrypted under the
 * server key, bound to the domain id; concurrent first uses agree on one key (insert, then read).
 */
export class DkimKeys {
  constructor(
    private readonly db: Database,
    private readonly cipher: TokenCipher,
    private readonly clock: Clock,
  ) {}

  async forDomain(domainId: string): Promise<DkimKey> {
    const row = (await this.load(domainId)) ?? (await this.create(domainId));
    return {
      domain: row.name,
      selector: row.selector,
      privateKeyPem: this.cipher.decrypt(row.private_key_cipher, `dkim:${domainId}`),
      publicKey: row.public_key,
    };
  }

  /** GET /api/domain/dkim: the record of the caller's own domain (domain token, DomainManage). */
  async recordFor(principal: Principal): Promise<DkimRecord> {
    requireDomainToken(principal);
    requireScope(principal, 'DomainManage');
    return this.record(principal.domainId);
  }

  async record(domainId: string): Promise<DkimRecord> {
    const key = await this.forDomain(domainId);
    return {
      domain: key.domain,
      selector: key.selector,
      name: `${key.selector}._domainkey.${key.domain}`,
      type: 'TXT',
      value: `v=DKIM1; k=rsa; p=${key.publicKey}`,
    };
  }

  private async load(domainId: string) {
    return dkimKeyOf(this.db, domainId);
  }

  private async create(domainId: string) {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const now = this.clock.now();
    // A dated selector lets a later rotation publish the next key beside this one.
    const selector = `mbx${now.toISOString().slice(0, 7).replace('-', '')}`;
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const pub = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
    await insertDkimKey(this.db, {
      domainId,
      selector,
      privateKeyCipher: this.cipher.encrypt(pem, `dkim:${domainId}`),
      publicKey: pub,
      at: now,
    });
    const row = await this.load(domainId);
    if (!row) throw new Error(`domain ${domainId} does not exist`);
    return row;
  }
}
