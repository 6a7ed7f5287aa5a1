import { defineEntity, p } from '@mikro-orm/core';

/** A hosted mail domain; owns mailboxes and domain tokens. */
export const DomainEntity = defineEntity({
  name: 'Domain',
  tableName: 'domain',
  properties: {
    id: p.string().primary().length(40),
    name: p.string().length(253).unique(),
    sendRateLimitPerMinute: p.integer().nullable(),
    /** Storage quota of its mailboxes that set none (bytes); null: STORAGE_QUOTA_DEFAULT_BYTES. */
    defaultStorageQuotaBytes: p.bigint('number').nullable(),
    /** `namespace/name` of the declaring resource, when declared by a manifest. */
    resourceKey: p.string().length(300).nullable().unique(),
    createdAt: p.datetime(3),
    disabledAt: p.datetime(3).nullable(),
  },
});
