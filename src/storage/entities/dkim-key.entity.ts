import { defineEntity, p } from '@mikro-orm/core';
import { DomainEntity } from './domain.entity.js';

/**
 * The DKIM signing key of one hosted domain (RFC 6376), generated on first use. The private key is
 * stored encrypted under the server key (bound to the domain id); the public key is what the
 * domain's `<selector>._domainkey` TXT record must publish.
 */
export const DkimKeyEntity = defineEntity({
  name: 'DkimKey',
  tableName: 'dkim_key',
  properties: {
    domain: () => p.manyToOne(DomainEntity).mapToPk().primary().deleteRule('cascade').updateRule('no action'),
    selector: p.string().length(63),
    algorithm: p.string().length(16),
    privateKeyCipher: p.text(),
    publicKey: p.text(),
    createdAt: p.datetime(3),
  },
});
