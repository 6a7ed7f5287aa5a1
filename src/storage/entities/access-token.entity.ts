import { defineEntity, p } from '@mikro-orm/core';
import { DomainEntity } from './domain.entity.js';
import { MailboxEntity } from './mailbox.entity.js';

/**
 * An access token. Only the SHA-256 hash is kept for lookup; the plaintext exists at rest only
 * as AES-256-GCM ciphertext while `revealUntil` lies ahead, and the sweeper erases it after.
 */
export const AccessTokenEntity = defineEntity({
  name: 'AccessToken',
  tableName: 'access_token',
  properties: {
    id: p.string().primary().length(40),
    kind: p.string().length(16),
    domain: () => p.manyToOne(DomainEntity).mapToPk().index().deleteRule('cascade'),
    mailbox: () => p.manyToOne(MailboxEntity).mapToPk().nullable().index().deleteRule('cascade'),
    name: p.string().length(200),
    tokenPrefix: p.string().length(32),
    tokenHash: p.string().length(64).unique(),
    scopes: p.array(),
    createdSource: p.string().length(32),
    parentTokenId: p.string().length(40).nullable(),
    /** The token's own policy narrowing, given on creation; null: inherits. */
    policy: p.json().nullable(),
    expiresAt: p.datetime(3).nullable(),
    disabledAt: p.datetime(3).nullable(),
    lastUsedAt: p.datetime(3).nullable(),
    lastUsedRemoteIp: p.string().length(64).nullable(),
    plaintextCipher: p.text().nullable(),
    revealUntil: p.datetime(3).nullable(),
    createdAt: p.datetime(3),
  },
});
