import http from 'node:http';
import https from 'node:https';
import type { LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { MailboxEvent } from '../../../types/mailbox-event.js';
import { toOccurrence } from '../../state/events/event-occurrence.js';
import type { NetworkTargetPolicy } from '../../base/net/network-targets.js';
import { parseWebhookUrl, resolveWebhookTarget } from './webhook-target.js';

export type SendOutcome = { ok: true; status: number } | { ok: false; error: string };

/** The webhook-id of an event: unique across mailboxes and the same on every retry (receivers dedupe by it). */
export const webhookMessageId = (e: MailboxEvent) => `${e.mailboxId}_${e.eventId}`;

/**
 * POSTs one event as JSON, signed per Standard Webhooks v1 (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature`, by the standardwebhooks library). The connection goes to the address the
 * network-target rule checked (a pinned lookup), with the URL's host name for Host and TLS SNI.
 * Only 2xx within the timeout counts; redirects are not followed (a redirect could point anywhere).
 */
export async function sendWebhook(
  urlText: string,
  secret: string,
  event: MailboxEvent,
  options: {
    timeoutMs: number;
    connectTimeoutMs: number;
    policy: NetworkTargetPolicy;
    now: Date;
    subscriptionId?: string | null;
  },
): Promise<SendOutcome> {
  let target: { address: string; family: 4 | 6 };
  const url = parseWebhookUrl(urlText);
  try {
    target = await resolveWebhookTarget(url, options.policy);
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
  // An MCP events subscription receives the extension's EventOccurrence (whose eventId is this
  // webhook-id) and the X-MCP-Subscription-Id header its receiver routes by; a webhook the event.
  const subscriptionId = options.subscriptionId ?? null;
  const body = JSON.stringify(subscriptionId ? toOccurrence(event) : event);
  const id = webhookMessageId(event);
  const signature = new Webhook(secret).sign(id, options.now, body);
  const pinned: LookupFunction = (_host, opts, cb) => {
    if ((opts as { all?: boolean }).all)
      (cb as (err: null, addresses: LookupAddress[]) => void)(null, [
        { address: target.address, family: target.family },
      ]);
    else cb(null, target.address, target.family);
  };
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    // The whole exchange, not only idle gaps, must fit in the timeout: a receiver trickling bytes still times out.
    const timer = setTimeout(
      () => req.destroy(new Error(`no answer within ${options.timeoutMs} ms`)),
      options.timeoutMs,
    );
    const finish = (outcome: SendOutcome) => {
      clearTimeout(timer);
      resolve(outcome);
    };
    const req = client.request(
      url,
      {
        method: 'POST',
        lookup: pinned,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'user-agent': 'mailbox-service-webhooks/1',
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(options.now.getTime() / 1000)),
          'webhook-signature': signature,
          ...(subscriptionId ? { 'x-mcp-subscription-id': subscriptionId } : {}),
        },
      },
      (res) => {
        res.resume(); // the answer's body is not needed; drain it so the socket is freed
        const status = res.statusCode ?? 0;
        finish(status >= 200 && status < 300 ? { ok: true, status } : { ok: false, error: `HTTP ${status}` });
      },
    );
    // A listener that never accepts fails fast: the connect has its own, shorter limit.
    req.on('socket', (socket) => {
      if (!socket.connecting) return;
      const connectTimer = setTimeout(
        () => req.destroy(new Error(`no connection within ${options.connectTimeoutMs} ms`)),
        options.connectTimeoutMs,
      );
      socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', () => clearTimeout(connectTimer));
      socket.once('close', () => clearTimeout(connectTimer));
    });
    req.on('error', (err) => finish({ ok: false, error: err.message }));
    req.end(body);
  });
}
