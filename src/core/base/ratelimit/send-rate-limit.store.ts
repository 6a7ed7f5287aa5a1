import { sql } from '../../../storage/database.js';

/**
 * A mailbox's send rate limit per minute, over mailbox row `m`: its own, else its domain's; null
 * means the configured default (SEND_RATE_LIMIT_PER_MINUTE). Read with the mailbox wherever a
 * MailboxRef is built, so a send costs no query of its own for it (bench/smtp counts round trips).
 */
export const sendRateLimitSql = sql<number | null>`coalesce(m.send_rate_limit_per_minute,
  (select d_limit.send_rate_limit_per_minute from domain d_limit where d_limit.id = m.domain_id))`;
