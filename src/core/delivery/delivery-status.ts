import { sql, type Sql } from '../../storage/database.js';

/** Per recipient: queued (not tried or waiting for a transport), deferred (temporary failure), or final. */
export type RecipientStatus = 'queued' | 'deferred' | 'delivered' | 'failed';
export type DeliveryStatus = RecipientStatus;

/**
 * A message's deliveryStatus from its recipients: while any is unfinished it is `deferred` if one
 * had a temporary failure, else `queued`; once all are final it is `failed` if any failed, else
 * `delivered`. So `delivered` always means every recipient got it.
 */
export function overallStatus(statuses: readonly RecipientStatus[]): DeliveryStatus {
  if (statuses.some((s) => s === 'queued' || s === 'deferred')) return statuses.includes('deferred') ? 'deferred' : 'queued';
  return statuses.includes('failed') ? 'failed' : 'delivered';
}

/** Recomputes and stores the message's deliveryStatus inside the recipient change's transaction. */
export async function refreshDeliveryStatus(trx: Sql, messageId: string): Promise<DeliveryStatus> {
  const rows = (await sql<{ status: RecipientStatus }>`select status from message_recipient where message_id = ${messageId}`.execute(trx)).rows;
  const status = overallStatus(rows.map((r) => r.status));
  await sql`update message set delivery_status = ${status} where id = ${messageId}`.execute(trx);
  return status;
}
