import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Every Prometheus metric of the service, declared once. Channels and workers import the one they
 * feed; GET /metrics renders `registry`. Names follow Prometheus conventions (`_total`, `_seconds`).
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'mailbox_process_' });

export const httpRequests = new Counter({
  name: 'mailbox_http_requests_total',
  help: 'HTTP requests by route template, method and status',
  labelNames: ['route', 'method', 'status'] as const,
  registers: [registry],
});
export const httpDuration = new Histogram({
  name: 'mailbox_http_request_duration_seconds',
  help: 'HTTP request latency by route template and method',
  labelNames: ['route', 'method'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers: [registry],
});
export const smtpSessions = new Counter({
  name: 'mailbox_smtp_sessions_total',
  help: 'SMTP sessions by listener (submission, mx) and outcome',
  labelNames: ['listener', 'outcome'] as const,
  registers: [registry],
});
export const smtpMessages = new Counter({
  name: 'mailbox_smtp_messages_total',
  help: 'SMTP DATA outcomes by listener and reply class',
  labelNames: ['listener', 'outcome'] as const,
  registers: [registry],
});
export const smtpFlowWaits = new Counter({
  name: 'mailbox_smtp_flow_waits_total',
  help: 'MAIL FROMs held by flow control because their queue was over SMTP_QUEUE_HIGH_WATER: until it drained below (drained) or for all of SMTP_IN_FLOW_DELAY (delayed)',
  labelNames: ['listener', 'outcome'] as const,
  registers: [registry],
});
export const deliveryOutcomes = new Counter({
  name: 'mailbox_delivery_outcomes_total',
  help: 'Per-recipient delivery attempts by route (local, relay, mx, simulator; inbound: port 25 queue) and result',
  labelNames: ['route', 'result'] as const,
  registers: [registry],
});
export const socketsConnected = new Gauge({
  name: 'mailbox_realtime_sockets_connected',
  help: 'Socket.IO connections open on this process',
  registers: [registry],
});
export const eventsEmitted = new Counter({
  name: 'mailbox_realtime_events_emitted_total',
  help: 'Events emitted to Socket.IO rooms by type',
  labelNames: ['type'] as const,
  registers: [registry],
});
export const mcpRequests = new Counter({
  name: 'mailbox_mcp_requests_total',
  help: 'MCP requests by JSON-RPC method, tool (tools/call only, else none), protocol revision and HTTP status',
  labelNames: ['method', 'tool', 'revision', 'status'] as const,
  registers: [registry],
});
export const mcpDuration = new Histogram({
  name: 'mailbox_mcp_request_duration_seconds',
  help: 'MCP request latency by JSON-RPC method and tool (events/stream: how long the stream was held)',
  labelNames: ['method', 'tool'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 30, 300],
  registers: [registry],
});
