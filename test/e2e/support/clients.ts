import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import nodemailer from 'nodemailer';
import { io, type Socket } from 'socket.io-client';
import type { E2eEnv } from './environment.js';
import { kubectlJson } from './kubectl.js';

// The clients a user points at the cluster: fetch for HTTP, the MCP SDK client, nodemailer for SMTP
// (STARTTLS verified against the e2e CA) and socket.io-client, each aimed at a Service address.

/**
 * host:port of a Service port as reached from outside the cluster: its LoadBalancer address when it
 * has one (the k8s-node gives 10.244.0.1), else a node's InternalIP and the NodePort.
 */
export async function serviceAddress(env: E2eEnv, service: string, portName: string): Promise<string> {
  const svc = await kubectlJson(['-n', env.namespace, 'get', 'svc', service]);
  const port = svc.spec.ports.find((p: any) => p.name === portName);
  if (!port) throw new Error(`service ${service} has no port ${portName}`);
  const lb = svc.status?.loadBalancer?.ingress?.[0];
  if (lb?.ip || lb?.hostname) return `${lb.ip ?? lb.hostname}:${port.port}`;
  if (!port.nodePort) throw new Error(`service ${service} is neither a LoadBalancer with an address nor a NodePort`);
  const nodes = await kubectlJson(['get', 'nodes']);
  const ip = nodes.items[0].status.addresses.find((a: any) => a.type === 'InternalIP').address;
  return `${ip}:${port.nodePort}`;
}

export interface Answer<T = any> {
  status: number;
  data: T;
}

/** The HTTP API at base (http://host:port) with a bearer token; network errors throw. */
export class Api {
  constructor(
    readonly base: string,
    readonly token: string,
  ) {}

  async call<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const res = await fetch(`${this.base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${this.token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = { data: text };
    }
    return { status: res.status, data: json?.data as T } satisfies Answer<T>;
  }

  send(toAddress: string, subject: string, bodyText: string) {
    return this.call<{ messageId: string }>('POST', '/api/messages/send', { toAddress, subject, bodyText });
  }
}

export async function mcpClient(base: string, token: string): Promise<Client> {
  const client = new Client({ name: 'mailbox-e2e', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL('/mcp', base), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

export interface SmtpTarget {
  host: string;
  port: number;
  ca: string;
  servername: string;
}

export function smtpTarget(address: string, env: E2eEnv): SmtpTarget {
  const [host, port] = address.split(':');
  return { host: host!, port: Number(port), ca: env.smtpCa, servername: env.smtpHostname };
}

/**
 * One message over SMTP. With `auth`, submission: STARTTLS required and the certificate verified
 * against the e2e CA, then AUTH PLAIN; without, port 25 inbound (STARTTLS taken when offered).
 * Resolves to the server's final reply, e.g. `250 2.0.0 Queued as msg_…`.
 */
export async function smtpSend(
  target: SmtpTarget,
  mail: { from: string; to: string; subject: string; text: string },
  auth?: { user: string; pass: string },
): Promise<string> {
  const transport = nodemailer.createTransport({
    host: target.host,
    port: target.port,
    secure: false,
    requireTLS: Boolean(auth),
    auth,
    name: 'e2e-client.test',
    tls: { ca: target.ca, servername: target.servername },
    connectionTimeout: 15_000,
    greetingTimeout: 15_000,
    socketTimeout: 30_000,
  });
  try {
    const info = await transport.sendMail(mail);
    return info.response;
  } finally {
    transport.close();
  }
}

/** The `msg_…` id in `250 2.0.0 Queued as msg_…`. */
export const queuedId = (reply: string) => /Queued as (msg_\S+)/.exec(reply)?.[1] ?? null;

/** A websocket Socket.IO client on /hubs/mailbox-events; resolves once subscription.ready arrived. */
export async function realtimeClient(base: string, token: string): Promise<{ socket: Socket; events: any[] }> {
  const events: any[] = [];
  const socket = io(base, {
    path: '/hubs/mailbox-events',
    transports: ['websocket'],
    auth: { token },
    reconnection: false,
  });
  socket.onAny((name, payload) => events.push({ name, ...payload }));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no subscription.ready from ${base}`)), 15_000);
    socket.once('subscription.ready', () => {
      clearTimeout(timer);
      resolve();
    });
    socket.once('connect_error', (err: any) => {
      clearTimeout(timer);
      reject(new Error(`connect_error from ${base}: ${err.message} ${JSON.stringify(err.data ?? {})}`));
    });
  });
  return { socket, events };
}
