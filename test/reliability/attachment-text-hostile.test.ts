import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { twoTenants, type Tenants } from '../support/seed-messages.js';
import { seedAttachment } from '../support/seed-attachment.js';
import { contentBombPdf, deeplyNestedPdf, hugePageCountPdf } from '../support/hostile-pdf.js';
import { recordFigure, zeroFigure } from './support/figures.js';

// Hostile PDFs against attachment text (docs/api.md, "Attachment text"): a compressed content
// stream that inflates to 96 MiB of text operators (two of them, filling both extraction slots),
// a 200 000-deep nested array and 5 000 pages. Each must be refused with 422 within the time
// limit plus a margin, while the API of the same process keeps answering, measured by a probe
// calling GET /api/messages every 25 ms during the whole attack.

const SUITE = 'attachment text';
const TIMEOUT_MS = 3_000;
const ANSWER_WITHIN_MS = TIMEOUT_MS + 5_000;

let server: TestServer;
let t: Tenants;

beforeAll(async () => {
  server = await startTestServer({ env: { ATTACHMENT_TEXT_TIMEOUT: `${TIMEOUT_MS}ms` } });
  t = await twoTenants(server);
});
afterAll(async () => {
  await server?.close();
});

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.ceil((p / 100) * xs.length) - 1]!;

describe('hostile PDFs do not stall the API', () => {
  it('refuses each within the time limit while the API keeps answering', async () => {
    const files = [
      ['bomb-1.pdf', contentBombPdf()],
      ['bomb-2.pdf', contentBombPdf()],
      ['nested.pdf', deeplyNestedPdf()],
      ['pages.pdf', hugePageCountPdf()],
    ] as const;
    const seeded = [];
    for (const [filename, bytes] of files)
      seeded.push(await seedAttachment(server, t.a1, { filename, contentType: 'application/pdf', bytes }));

    const latencies: number[] = [];
    let probeFailures = 0;
    let attacking = true;
    const probe = (async () => {
      while (attacking) {
        const started = performance.now();
        const res = await server.api(t.a1.token).get('/api/messages?limit=5');
        latencies.push(performance.now() - started);
        if (res.status !== 200) probeFailures++;
        await new Promise((r) => setTimeout(r, 25));
      }
    })();

    const answers = await Promise.all(
      seeded.map(async (m) => {
        const started = performance.now();
        const res = await server.api(t.a1.token).get(`/api/messages/${m.messageId}/attachments/${m.attachmentId}/text`);
        return { status: res.status, ms: performance.now() - started };
      }),
    );
    attacking = false;
    await probe;

    const slowest = Math.max(...answers.map((a) => a.ms));
    const p99 = percentile(latencies, 99);
    recordFigure({
      suite: SUITE,
      name: 'slowest 422 for a hostile PDF',
      value: `${Math.round(slowest)} ms`,
      target: `≤ ${ANSWER_WITHIN_MS} ms`,
      pass: slowest <= ANSWER_WITHIN_MS,
    });
    recordFigure({
      suite: SUITE,
      name: `API p99 latency during the attack (${latencies.length} requests)`,
      value: `${Math.round(p99)} ms`,
      target: '≤ 1000 ms',
      pass: p99 <= 1000,
    });
    zeroFigure(SUITE, 'API requests failed during the attack', probeFailures);

    expect(answers.map((a) => a.status)).toEqual([422, 422, 422, 422]);
    expect(slowest).toBeLessThanOrEqual(ANSWER_WITHIN_MS);
    expect(probeFailures).toBe(0);
    expect(latencies.length).toBeGreaterThan(10);
  });
});
