import { Counter, Gauge } from 'prom-client';
import { sql, ms, num, type Database } from '../storage/database.js';
import type { EventBus } from '../storage/event-bus.js';
import { registry } from './metric-registry.js';

// Gauges computed when /metrics is scraped, from the database every replica shares: they are
// cluster-wide values (every replica reports the same; aggregate with max(), not sum()).
const queueDepth = new Gauge({
  name: 'mailbox_outbox_queue_depth',
  help: 'Outbox jobs not yet finished: due (run_after passed) or scheduled (retry or lease pending)',
  labelNames: ['state'] as const,
  registers: [registry],
});
const queueAge = new Gauge({
  name: 'mailbox_outbox_queue_oldest_age_seconds',
  help: 'Age of the oldest unfinished outbox job (0 when none)',
  registers: [registry],
});
const inboundDepth = new Gauge({
  name: 'mailbox_inbound_queue_depth',
  help: "Port 25's queued intake: messages waiting for the worker (pending) and set aside undelivered (failed)",
  labelNames: ['status'] as const,
  registers: [registry],
});
const inboundAge = new Gauge({
  name: 'mailbox_inbound_queue_oldest_age_seconds',
  help: 'Age of the oldest message waiting in the inbound queue (0 when none)',
  registers: [registry],
});
const eventLogLag = new Gauge({
  name: 'mailbox_event_log_lag_seconds',
  help: "How far this process's live event feed (the event bus) trails the durable event log: newest logged event minus newest announced one",
  registers: [registry],
});
const collectErrors = new Counter({
  name: 'mailbox_metrics_collect_errors_total',
  help: 'Scrapes whose database gauges could not be read (the gauges keep their last value)',
  registers: [registry],
});

const SCRAPE_QUERY_TIMEOUT_MS = 2_000;

/** What the database gauges read: the shared database, the clock, the live event feed. */
export interface MetricSources {
  db: Database;
  clock: { now(): Date };
  bus: EventBus;
}

/**
 * The render of GET /metrics, which first refreshes the database gauges (queue depth and age,
 * event-log lag). Request count and latency are fed by the HTTP channel (channels/http/request-metrics.ts).
 */
export function createMetrics(services: MetricSources): { render(): Promise<string> } {
  // The newest event this process heard announced; starts at the log's head (first scrape).
  let newestAnnouncedMs: number | null = null;
  services.bus.subscribe((event) => {
    newestAnnouncedMs = Math.max(newestAnnouncedMs ?? 0, event.occurredAtTs);
  });

  async function refreshDatabaseGauges(): Promise<void> {
    const now = services.clock.now();
    const [jobs, inbound, events] = await Promise.all([
      services.db.one(sql<{ due: unknown; scheduled: unknown; oldest: unknown }>`
        select count(*) filter (where run_after <= ${now} and (lease_until is null or lease_until <= ${now})) as due,
          count(*) filter (where run_after > ${now} or lease_until > ${now}) as scheduled, min(created_at) as oldest
        from outbox_job where status = 'pending'`),
      services.db.one(sql<{ pending: unknown; failed: unknown; oldest: unknown }>`
        select count(*) filter (where status = 'pending') as pending, count(*) filter (where status = 'failed') as failed,
          min(received_at) filter (where status = 'pending') as oldest
        from inbound_queue`),
      services.db.one(sql<{ newest: unknown }>`select max(occurred_at) as newest from mailbox_event`),
    ]);
    inboundDepth.set({ status: 'pending' }, num(inbound?.pending));
    inboundDepth.set({ status: 'failed' }, num(inbound?.failed));
    const oldestInbound = ms(inbound?.oldest);
    inboundAge.set(oldestInbound === null ? 0 : Math.max(0, (now.getTime() - oldestInbound) / 1000));
    queueDepth.set({ state: 'due' }, num(jobs?.due));
    queueDepth.set({ state: 'scheduled' }, num(jobs?.scheduled));
    const oldest = ms(jobs?.oldest);
    queueAge.set(oldest === null ? 0 : Math.max(0, (now.getTime() - oldest) / 1000));
    const newestLogged = ms(events?.newest);
    newestAnnouncedMs ??= newestLogged ?? 0;
    eventLogLag.set(newestLogged === null ? 0 : Math.max(0, (newestLogged - newestAnnouncedMs) / 1000));
  }

  return {
    async render() {
      let timer: NodeJS.Timeout | undefined;
      try {
        // A scrape must answer even while the database is slow or down (process metrics still matter).
        await Promise.race([
          refreshDatabaseGauges(),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error('timeout')), SCRAPE_QUERY_TIMEOUT_MS);
          }),
        ]);
      } catch {
        collectErrors.inc();
      } finally {
        clearTimeout(timer);
      }
      return registry.metrics();
    },
  };
}
