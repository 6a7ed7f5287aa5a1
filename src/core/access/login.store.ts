import { sql, type Database } from '../../storage/database.js';
import type { Narrow, Row } from '../../storage/rows.js';
import { revealableSql } from './token.store.js';

/** A mailbox token a login may hand out again: still revealable, so its cipher is set. */
export type ReusableTokenRow = Narrow<
  Row<'access_token', 'id' | 'token_prefix' | 'scopes' | 'expires_at' | 'plaintext_cipher'>,
  { plaintext_cipher: string }
>;

/**
 * What login or a mailbox's creation handed out (access_token.created_source): the only tokens a
 * login may hand out again. A token someone minted for the mailbox (an approver, a webhook
 * manager) is never given to whoever knows the password.
 */
export const LOGIN_REUSABLE_SOURCES = ['login', 'bootstrap'] as const;

/**
 * The newest revealable token that login or bootstrap created for the mailbox with exactly
 * `scopes` (set equality: a wider token would hand out what login never grants) and no policy of
 * its own (login mints none).
 */
export async function reusableMailboxToken(
  db: Database,
  mailboxId: string,
  scopes: readonly string[],
  now: Date,
): Promise<ReusableTokenRow | undefined> {
  return db.one(sql<ReusableTokenRow>`
      select t.id, t.token_prefix, t.scopes, t.expires_at, t.plaintext_cipher from access_token t
      where t.mailbox_id = ${mailboxId} and t.kind = 'mailbox' and ${revealableSql(now)}
        and t.created_source = any(${[...LOGIN_REUSABLE_SOURCES]}::text[]) and t.policy is null
        and t.scopes @> ${[...scopes]}::text[] and t.scopes <@ ${[...scopes]}::text[]
      order by t.created_at desc limit 1`);
}

/** An enabled mailbox of an enabled domain, by address, with its password hash. */
export async function loginMailbox(
  db: Database,
  address: string,
): Promise<Row<'mailbox', 'id' | 'domain_id' | 'address' | 'password_hash'> | undefined> {
  return db.one(sql<Row<'mailbox', 'id' | 'domain_id' | 'address' | 'password_hash'>>`
      select m.id, m.domain_id, m.address, m.password_hash from mailbox m join domain d on d.id = m.domain_id
      where m.address = ${address} and m.disabled_at is null and d.disabled_at is null`);
}
