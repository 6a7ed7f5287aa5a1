import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { createInterface } from 'node:readline';
import { sendWebhook } from '../../src/core/flows/webhooks/webhook-sender.js';
import type { MailboxEvent } from '../../src/types/mailbox-event.js';

// The two time limits of one attempt (docs/webhooks.md, "What is sent"): a listener whose accept
// queue is full never completes the TCP handshake (Linux drops the SYN), so only the connect limit
// ends the attempt; a listener that accepts and never answers is ended by the total limit.

let backlogFull: ChildProcess;
let fullPort: number;
let filler: net.Socket;
let silent: net.Server;
const held: net.Socket[] = [];

beforeAll(async () => {
  // A socket listening with a queue of one, never accepting: one connection fills it.
  backlogFull = spawn('python3', [
    '-c',
    "import socket,time\ns=socket.socket();s.bind(('127.0.0.1',0));s.listen(0)\nprint(s.getsockname()[1],flush=True)\ntime.sleep(120)",
  ]);
  fullPort = Number(await new Promise<string>((r) => createInterface({ input: backlogFull.stdout! }).once('line', r)));
  filler = net.connect(fullPort, '127.0.0.1');
  await new Promise((r) => filler.once('connect', r));
  silent = net.createServer((s) => {
    held.push(s);
    s.resume();
  });
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
});
afterAll(async () => {
  filler?.destroy();
  backlogFull?.kill();
  for (const s of held) s.destroy();
  await new Promise<void>((r) => silent?.close(() => r()));
});

const event = { eventId: '1', type: 'message.read-state', mailboxId: 'mbx_1', data: {} } as unknown as MailboxEvent;
const policy = { allowPrivate: true };

describe('a webhook attempt', () => {
  it('ends at WEBHOOK_CONNECT_TIMEOUT when the connection is never established', async () => {
    const started = Date.now();
    const outcome = await sendWebhook(
      `http://127.0.0.1:${fullPort}/x`,
      'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
      event,
      {
        timeoutMs: 10_000,
        connectTimeoutMs: 300,
        policy,
        now: new Date(),
      },
    );
    expect(outcome).toEqual({ ok: false, error: 'no connection within 300 ms' });
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('ends at WEBHOOK_TIMEOUT when the receiver accepts and never answers', async () => {
    const port = (silent.address() as net.AddressInfo).port;
    const started = Date.now();
    const outcome = await sendWebhook(`http://127.0.0.1:${port}/x`, 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', event, {
      timeoutMs: 600,
      connectTimeoutMs: 300,
      policy,
      now: new Date(),
    });
    expect(outcome).toEqual({ ok: false, error: 'no answer within 600 ms' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(550);
  });
});
