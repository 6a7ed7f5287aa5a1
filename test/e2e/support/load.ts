import { randomUUID } from 'node:crypto';
import { Api, queuedId, smtpSend, type SmtpTarget } from './clients.js';
import { sleep } from './kubectl.js';

// Steady light load through the Services while something is disrupted: HTTP list + send on the
// api Service, SMTP submissions on the LoadBalancer. Every acknowledgement (202, 250 Queued as)
// is kept so that afterwards each acknowledged message can be looked up.

export interface LoadStats {
  requests: number;
  failures: string[];
  acknowledged: string[];
}

export interface Load {
  stop(): Promise<{ http: LoadStats; smtp: LoadStats }>;
}

const stats = (): LoadStats => ({ requests: 0, failures: [], acknowledged: [] });

export function startLoad(opts: {
  apiBase?: string;
  smtp?: SmtpTarget;
  from: { address: string; token: string };
  to: string;
  httpEveryMs?: number;
  smtpEveryMs?: number;
  smtpClients?: number;
}): Load {
  let running = true;
  const http = stats();
  const smtp = stats();
  const loops: Promise<void>[] = [];
  if (opts.apiBase) {
    const api = new Api(opts.apiBase, opts.from.token);
    loops.push(
      (async () => {
        for (let i = 0; running; i++) {
          const t = Date.now();
          try {
            http.requests++;
            const list = await api.call('GET', '/api/messages?limit=5');
            if (list.status !== 200) http.failures.push(`list ${list.status}`);
            http.requests++;
            const sent = await api.call(
              'POST',
              '/api/messages/send',
              { toAddress: opts.to, subject: `load http ${i}`, bodyText: 'steady' },
              { 'idempotency-key': randomUUID() },
            );
            if (sent.status === 202) http.acknowledged.push(sent.data.messageId);
            else http.failures.push(`send ${sent.status}`);
          } catch (err) {
            http.failures.push(`${(err as Error).message} ${String((err as any).cause?.code ?? '')}`.trim());
          }
          await sleep(Math.max(0, (opts.httpEveryMs ?? 250) - (Date.now() - t)));
        }
      })(),
    );
  }
  if (opts.smtp) {
    const target = opts.smtp;
    for (let c = 0; c < (opts.smtpClients ?? 1); c++) {
      loops.push(
        (async () => {
          for (let i = 0; running; i++) {
            const t = Date.now();
            smtp.requests++;
            try {
              const reply = await smtpSend(
                target,
                { from: opts.from.address, to: opts.to, subject: `load smtp ${c}.${i}`, text: 'steady' },
                { user: opts.from.address, pass: opts.from.token },
              );
              const id = queuedId(reply);
              if (id) smtp.acknowledged.push(id);
              else smtp.failures.push(reply.slice(0, 60));
            } catch (err) {
              smtp.failures.push(`${(err as Error).message}`.slice(0, 100));
            }
            await sleep(Math.max(0, (opts.smtpEveryMs ?? 500) - (Date.now() - t)));
          }
        })(),
      );
    }
  }
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return { http, smtp };
    },
  };
}

/** Acknowledged ids the sender's mailbox no longer has (GET /api/messages/{id} not 200). */
export async function lostOf(apiBase: string, token: string, ids: string[]): Promise<string[]> {
  const api = new Api(apiBase, token);
  const lost: string[] = [];
  for (const id of ids) {
    const r = await api.call('GET', `/api/messages/${id}`).catch(() => ({ status: 0 }));
    if (r.status !== 200) lost.push(id);
  }
  return lost;
}

/** "3 × ECONNRESET, 1 × send 503": failures grouped for a figure's value. */
export function summarize(failures: string[]): string {
  const counts = new Map<string, number>();
  for (const f of failures) counts.set(f, (counts.get(f) ?? 0) + 1);
  return [...counts].map(([f, n]) => `${n} × ${f}`).join('; ');
}
