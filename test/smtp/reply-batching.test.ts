import net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { SmtpWire } from './smtp-wire.js';
import { loggedInWire, mxPort, startSmtpTestServer } from './world.js';

// Replies made in one turn of the event loop leave in one write (MailboxSmtpConnection's
// batchReplies): pipelined commands (RFC 2920) answered together cost one system call and, under
// TLS, one record. Counted on the server's side of the socket: a corked socket hands its chunks
// to `_writev` at once; an uncorked one calls `_write` per reply.

let server: TestServer;
const writes: { port: number; chunks: number }[] = [];
const proto = net.Socket.prototype as unknown as {
  _write: (...a: unknown[]) => void;
  _writev: (...a: unknown[]) => void;
};
const { _write, _writev } = proto;

beforeAll(async () => {
  server = await startSmtpTestServer();
  proto._write = function (this: net.Socket, ...a: unknown[]) {
    writes.push({ port: this.localPort ?? 0, chunks: 1 });
    return _write.apply(this, a);
  };
  proto._writev = function (this: net.Socket, ...a: unknown[]) {
    writes.push({ port: this.localPort ?? 0, chunks: (a[0] as unknown[]).length });
    return _writev.apply(this, a);
  };
});
afterEach(() => {
  writes.length = 0;
});
afterAll(async () => {
  proto._write = _write;
  proto._writev = _writev;
  await server?.close();
});

describe('SMTP replies of one event-loop turn', () => {
  it('pipelined commands answered together go out in one write', async () => {
    const wire = await SmtpWire.connect(mxPort(server));
    await wire.cmd('EHLO peer.example', 250);
    writes.length = 0;
    wire.write('NOOP\r\nNOOP\r\nNOOP\r\n');
    for (let i = 0; i < 3; i++) await wire.expect(250);
    const server25 = writes.filter((w) => w.port === mxPort(server));
    expect(server25).toEqual([{ port: mxPort(server), chunks: 3 }]);
    await wire.cmd('QUIT', 221);
  });

  it('STARTTLS still answers 220 before the handshake, and the session goes on under TLS', async () => {
    // loggedInWire: EHLO, STARTTLS (its 220 unbatched, then the handshake), EHLO again, AUTH.
    const x = await server.createDomain();
    const m = await server.createMailbox(x.token, `batch@${x.name}`);
    const wire = await loggedInWire(server, m);
    wire.write('NOOP\r\nNOOP\r\n');
    await wire.expect(250);
    await wire.expect(250);
    await wire.cmd('QUIT', 221);
  });
});
