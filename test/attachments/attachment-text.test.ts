import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startTestServer, type TestServer } from '../support/harness.js';
import { twoTenants, type Tenants } from '../support/seed-messages.js';
import { seedAttachment } from '../support/seed-attachment.js';
import { deeplyNestedPdf, hugePageCountPdf } from '../support/hostile-pdf.js';
import { rowsOf } from '../delivery/helpers.js';
import { fails, mcpClient, ok } from '../mcp/helpers.js';

// GET /api/messages/{id}/attachments/{id}/text and MCP get_attachment on real files: a PDF made by
// pdf-lib, a DOCX made by docx (test/fixtures/attachments/generate.ts), HTML and plain text.

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/attachments');
let server: TestServer;
let t: Tenants;
const q = rowsOf(() => server);

beforeAll(async () => {
  server = await startTestServer({
    env: { ATTACHMENT_TEXT_MAX_BYTES: String(2 * 1024 * 1024), ATTACHMENT_TEXT_MAX_CHARS: '5000' },
  });
  t = await twoTenants(server);
});
afterAll(async () => {
  await server?.close();
});

const textOf = (m: { messageId: string; attachmentId: string }, token = t.a1.token) =>
  server.api(token).get(`/api/messages/${m.messageId}/attachments/${m.attachmentId}/text`);
const seed = (filename: string, contentType: string, bytes: Buffer) =>
  seedAttachment(server, t.a1, { filename, contentType, bytes });

describe('attachment text', () => {
  it('reads a real PDF, page by page', async () => {
    const m = await seed('report.pdf', 'application/pdf', readFileSync(path.join(FIXTURES, 'report.pdf')));
    const res = await textOf(m);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ kind: 'pdf', truncated: false, filename: 'report.pdf' });
    expect(res.body.data.text).toContain('Quarterly report: revenue grew 12 percent.');
    expect(res.body.data.text).toContain('Page two: the invoice total is 4200 EUR.');
  });

  it('reads a real DOCX, found by extension when the type is generic', async () => {
    const m = await seed('notes.docx', 'application/octet-stream', readFileSync(path.join(FIXTURES, 'notes.docx')));
    const res = await textOf(m);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.kind).toBe('docx');
    expect(res.body.data.text).toContain('The launch moves to April 14.');
    expect(res.body.data.text).toContain('Action item: Jo sends the contract.');
  });

  it('reads HTML as text and plain text as is', async () => {
    const html = await seed('page.html', 'text/html', Buffer.from('<h1>Terms</h1><p>Pay within <b>30 days</b>.</p>'));
    const res = await textOf(html);
    expect(res.body.data.kind).toBe('html');
    expect(res.body.data.text).toMatch(/TERMS\s+Pay within 30 days\./);
    const csv = await seed('data.csv', 'text/csv', Buffer.from('a,b\n1,2\n'));
    expect((await textOf(csv)).body.data).toMatchObject({ kind: 'text', text: 'a,b\n1,2\n' });
  });

  it('caps the output and says so', async () => {
    const m = await seed('long.txt', 'text/plain', Buffer.from('x'.repeat(12_000)));
    const res = await textOf(m);
    expect(res.body.data.text).toHaveLength(5000);
    expect(res.body.data.truncated).toBe(true);
  });

  it('caches the text: a second read is the stored row', async () => {
    const m = await seed('cached.txt', 'text/plain', Buffer.from('cached once'));
    const first = await textOf(m);
    const second = await textOf(m);
    expect(second.body.data).toEqual(first.body.data);
    const rows = await q`select status, text from attachment_text where attachment_id = ${m.attachmentId}`;
    expect(rows).toEqual([{ status: 'ok', text: 'cached once' }]);
  });

  it('415 for other types, 413 over the size cap', async () => {
    const image = await seed('photo.png', 'image/png', Buffer.from([0x89, 0x50, 0x4e, 0x47]));
    const unsupported = await textOf(image);
    expect(unsupported.status).toBe(415);
    expect(unsupported.body.errMsg).toMatch(/image\/png is not PDF, DOCX, HTML or text/);
    const big = await seed('big.txt', 'text/plain', Buffer.alloc(2 * 1024 * 1024 + 1, 'a'));
    expect((await textOf(big)).status).toBe(413);
  });

  it('422 for hostile PDFs (too many pages, deep nesting), and the failure is cached', async () => {
    const pages = await seed('pages.pdf', 'application/pdf', hugePageCountPdf());
    const res = await textOf(pages);
    expect(res.status).toBe(422);
    expect(res.body.errMsg).toMatch(/5000 pages \(at most 2000\)/);
    const nested = await seed('nested.pdf', 'application/pdf', deeplyNestedPdf());
    expect((await textOf(nested)).status).toBe(422);
    const rows = await q`select status, error_code from attachment_text where attachment_id = ${pages.attachmentId}`;
    expect(rows).toEqual([{ status: 'failed', error_code: 'ATTACHMENT_TEXT_FAILED' }]);
    expect((await textOf(pages)).status).toBe(422);
  });

  it('is visible only where the message is: another tenant gets 404', async () => {
    const m = await seed('secret.txt', 'text/plain', Buffer.from('secret'));
    expect((await textOf(m, t.b1.token)).status).toBe(404);
    expect((await textOf(m, t.a2.token)).status).toBe(404);
    expect((await textOf({ ...m, attachmentId: 'att_nope' })).status).toBe(404);
  });

  it('MCP get_attachment returns the same text; errors carry the same codes', async () => {
    const m = await seed('mcp.txt', 'text/plain', Buffer.from('via mcp'));
    const client = await mcpClient(server, t.a1.token);
    try {
      const got = await ok(client, 'get_attachment', m);
      expect(got).toMatchObject({ text: 'via mcp', kind: 'text' });
      const image = await seed('photo2.png', 'image/png', Buffer.from([1, 2, 3]));
      expect((await fails(client, 'get_attachment', image)).code).toBe(415);
    } finally {
      await client.close();
    }
  });
});
