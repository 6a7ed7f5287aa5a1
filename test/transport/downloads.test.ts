import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { contentDisposition } from '../../src/channels/http/routes/download.routes.js';
import { seedMessageWithRaw } from './download-fixtures.js';

let server: TestServer;
let x: { domainId: string; name: string; token: string };
let y: { domainId: string; name: string; token: string };
let a: { mailboxId: string; address: string; token: string };
let b: { mailboxId: string; address: string; token: string };

beforeAll(async () => {
  server = await startTestServer();
  x = await server.createDomain();
  y = await server.createDomain();
  a = await server.createMailbox(x.token, `a@${x.name}`);
  b = await server.createMailbox(x.token, `b@${x.name}`);
});
afterAll(async () => {
  await server?.close();
});

const get = (path: string, token: string) =>
  fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${token}` } });

describe('downloads', () => {
  it('serves the raw source as message/rfc822 and an attachment with its type and a safe RFC 6266 disposition', async () => {
    const m = await seedMessageWithRaw(server, a, { filename: 'über "quote".txt', content: 'le contenu ✓' });
    const raw = await get(`/api/messages/${m.messageId}/raw`, a.token);
    expect(raw.status).toBe(200);
    expect(raw.headers.get('content-type')).toBe('message/rfc822');
    expect(raw.headers.get('content-disposition')).toBe(
      `attachment; filename="${m.messageId}.eml"; filename*=UTF-8''${m.messageId}.eml`,
    );
    expect(raw.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await raw.text()).toBe(m.raw);
    const detail = await server.api(a.token).get(`/api/messages/${m.messageId}`);
    expect(detail.body.data.rawContentPath).toBe(`/api/messages/${m.messageId}/raw`);
    const att = await get(`/api/messages/${m.messageId}/attachments/${m.attachmentId}`, x.token);
    expect(att.status).toBe(200);
    expect(att.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(att.headers.get('content-disposition')).toBe(
      `attachment; filename="_ber _quote_.txt"; filename*=UTF-8''%C3%BCber%20%22quote%22.txt`,
    );
    expect(Buffer.from(await att.arrayBuffer()).toString()).toBe('le contenu ✓');
  });

  it('is 404 for another mailbox, another domain, a foreign attachment id and a deleted message', async () => {
    const m = await seedMessageWithRaw(server, a);
    const other = await seedMessageWithRaw(server, b);
    for (const token of [b.token, y.token]) {
      expect((await get(`/api/messages/${m.messageId}/raw`, token)).status).toBe(404);
      expect((await get(`/api/messages/${m.messageId}/attachments/${m.attachmentId}`, token)).status).toBe(404);
    }
    const mismatched = await get(`/api/messages/${m.messageId}/attachments/${other.attachmentId}`, a.token);
    expect(mismatched.status).toBe(404);
    expect(((await mismatched.json()) as { code: number }).code).toBe(404);
    await server.api(a.token).delete(`/api/messages/${m.messageId}`);
    expect((await get(`/api/messages/${m.messageId}/raw`, a.token)).status).toBe(404);
    expect((await get(`/api/messages/${m.messageId}/attachments/${m.attachmentId}`, a.token)).status).toBe(404);
  });

  it('builds dispositions that cannot break the header', () => {
    expect(contentDisposition('a\r\nSet-Cookie: x=1')).toBe(
      `attachment; filename="a__Set-Cookie: x=1"; filename*=UTF-8''a%0D%0ASet-Cookie%3A%20x%3D1`,
    );
    expect(contentDisposition('100%.txt')).toBe(`attachment; filename="100_.txt"; filename*=UTF-8''100%25.txt`);
    expect(contentDisposition('日本.pdf')).toBe(
      `attachment; filename="__.pdf"; filename*=UTF-8''%E6%97%A5%E6%9C%AC.pdf`,
    );
  });
});
