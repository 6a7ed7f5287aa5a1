import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createScratchDatabase, type TestServer } from '../support/harness.js';
import { extractorPids, seedDomain, serviceProcess, Supervisor, type ServiceProcess } from '../support/processes.js';
import { seedAttachment } from '../support/seed-attachment.js';
import { docxBomb } from '../support/docx-bomb.js';
import { contentBombPdf } from '../support/hostile-pdf.js';
import { recordFigure, zeroFigure } from './support/figures.js';
import { scale } from './support/scale.js';
import { ProcessMeter, rssMb } from './support/proc-stats.js';
import type { Runtime } from '../../src/runtime/runtime.js';

// Decompression bombs against attachment text (docs/attachment-extraction.md) in a separate
// `mailbox serve --roles api` process started as the chart's api pod (its 512 MiB memory limit, a
// cgroup where this machine allows one: support/as-pod.ts), PostgreSQL and BLOB_STORE=postgres.
// The figure is the server process's own RSS (not its extractor's) while a bomb is read: before
// the extractor ran in a process of its own, a 1.5 GB DOCX took the api from 174 MB to 4.7 GB and
// the kernel killed it, again on the retry after its restart. Then the crash rule: the server
// killed in the middle of an extraction, restarted, answers that file failed without running it.

const SUITE = 'attachment bombs';
const POD_MEMORY_LIMIT_MB = 512;
/** What reading one bomb may add to the server's RSS (its extractor's memory is not its own). */
const RSS_GROWTH_BOUND_MB = 100;
const TIMEOUT_MS = 5_000;
const DOCX_BOMB_BYTES = scale(400_000_000, 1_500_000_000);
const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
let proc: ServiceProcess;
let seeder: Runtime;
let seederDir: string;
let mailbox: { mailboxId: string; token: string };

beforeAll(async () => {
  scratch = await createScratchDatabase();
  const env = {
    DATABASE_URL: scratch.url,
    BLOB_STORE: 'postgres',
    MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
    LOG_LEVEL: 'warn',
    ATTACHMENT_TEXT_TIMEOUT: `${TIMEOUT_MS}ms`,
  };
  const domain = await seedDomain(env);
  proc = await serviceProcess(env, 'api', { asPod: { memoryLimitMb: POD_MEMORY_LIMIT_MB } });
  await proc.start();
  const res = await fetch(`${proc.url}/api/mailboxes`, {
    method: 'POST',
    headers: { authorization: `Bearer ${domain.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ address: `bombs@${domain.name}` }),
  });
  const created = (await res.json()) as { data: { mailbox: { mailboxId: string }; initialAccessToken: string } };
  mailbox = { mailboxId: created.data.mailbox.mailboxId, token: created.data.initialAccessToken };
  // Messages and blobs are written straight into the service's database by a runtime of its own.
  const { loadConfig } = await import('../../src/config/config.js');
  const { startRuntime } = await import('../../src/runtime/runtime.js');
  const { silentLogger } = await import('../../src/core/base/logger.js');
  seederDir = mkdtempSync(path.join(tmpdir(), 'mbx-bombs-'));
  seeder = await startRuntime(loadConfig({ ...env, MAILBOX_DATA_DIR: seederDir }), { roles: [], log: silentLogger });
}, 180_000);

afterAll(async () => {
  await seeder?.close();
  await proc?.stop();
  await scratch?.drop();
  if (seederDir) rmSync(seederDir, { recursive: true, force: true });
});

const seed = (filename: string, contentType: string, bytes: Buffer) =>
  seedAttachment({ runtime: seeder } as unknown as TestServer, mailbox, { filename, contentType, bytes });
const get = async (p: string) => {
  const res = await fetch(`${proc.url}${p}`, { headers: { authorization: `Bearer ${mailbox.token}` } });
  const body = (await res.json()) as { errMsg?: string };
  // The answer without its trace id, so two answers compare equal.
  return { status: res.status, errMsg: body.errMsg };
};
const textOf = (m: { messageId: string; attachmentId: string }) =>
  get(`/api/messages/${m.messageId}/attachments/${m.attachmentId}/text`);
const oomKills = () => (proc.pod && typeof proc.pod.cgroup !== 'string' ? proc.pod.cgroup.oomKills() : 0);

/** Reads one bomb twice (the retry answers from the record), metering the server's RSS. */
async function readBomb(name: string, bytes: Buffer, contentType: string, reason: RegExp): Promise<void> {
  const m = await seed(name, contentType, bytes);
  const before = rssMb(proc.pid()!);
  const meter = new ProcessMeter(proc.pid()!);
  meter.start();
  const first = await textOf(m);
  const retry = await textOf(m);
  const { peakRssMb } = meter.stop();
  const growth = Math.round(peakRssMb - before);
  recordFigure({
    suite: SUITE,
    name: `server RSS while ${name} is read (${meter.peakMethod})`,
    value: `${peakRssMb} MB (+${growth} MB)`,
    target: `≤ +${RSS_GROWTH_BOUND_MB} MB, in a ${POD_MEMORY_LIMIT_MB} MiB pod`,
    pass: growth <= RSS_GROWTH_BOUND_MB && proc.running(),
  });
  expect(proc.running()).toBe(true);
  expect(first.status, first.errMsg).toBe(422);
  expect(first.errMsg).toMatch(reason);
  expect(retry).toEqual(first);
  expect(growth).toBeLessThanOrEqual(RSS_GROWTH_BOUND_MB);
  expect((await get('/api/messages?limit=1')).status).toBe(200);
}

describe('decompression bombs do not take the server down', () => {
  it(`a ${DOCX_BOMB_BYTES / 1e9} GB DOCX, one that lies about its size, a 96 MiB PDF`, async () => {
    const gb = `${DOCX_BOMB_BYTES / 1e9} GB`;
    await readBomb(`a ${gb} DOCX bomb`, docxBomb(DOCX_BOMB_BYTES), DOCX, /\(too-large-inflated\)/);
    await readBomb(
      `a ${gb} DOCX declaring 1 000 bytes`,
      docxBomb(DOCX_BOMB_BYTES, { lie: true }),
      DOCX,
      /\(too-large-inflated\): word\/document\.xml inflates past its declared 1000 bytes/,
    );
    await readBomb('a 96 MiB PDF content bomb', contentBombPdf(), 'application/pdf', /\(memory\)/);
    const peak = proc.pod && typeof proc.pod.cgroup !== 'string' ? proc.pod.cgroup.peakMb() : null;
    recordFigure({
      suite: SUITE,
      name: "the pod's peak memory (server and its extractors: one cgroup)",
      value: peak === null ? `n/a (${String(proc.pod?.cgroup)})` : `${peak} MB`,
      target: `< ${POD_MEMORY_LIMIT_MB} MiB`,
      pass: peak === null || peak < POD_MEMORY_LIMIT_MB,
    });
    const kills = oomKills();
    zeroFigure(SUITE, `out-of-memory kills in the pod's cgroup (${proc.pod?.runtime ?? 'tsx'})`, kills);
    expect(kills).toBe(0);
  });

  it('the server killed mid-extraction: after its restart the file answers failed, and is not extracted again', async () => {
    const m = await seed(
      'slow.html',
      'text/html',
      Buffer.from('<div>'.repeat(100_000) + 'x' + '</div>'.repeat(100_000)),
    );
    const pending = textOf(m).catch(() => null);
    let orphans: number[] = [];
    for (let i = 0; i < 400 && orphans.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 25));
      orphans = extractorPids(proc.pid()!);
    }
    expect(orphans).toHaveLength(1);
    await new Supervisor(proc).crash();
    await pending;
    let reruns = 0;
    const watching = setInterval(() => (reruns += extractorPids(proc.pid()!).length > 0 ? 1 : 0), 25);
    const started = performance.now();
    const after = await textOf(m);
    const again = await textOf(m);
    clearInterval(watching);
    zeroFigure(SUITE, 'extractor runs after a crash mid-extraction (the file is poisoned, not retried)', reruns);
    recordFigure({
      suite: SUITE,
      name: 'first read after the crash answers failed (interrupted)',
      value: `${after.status} in ${Math.round(performance.now() - started)} ms`,
      target: `422 within the claim's deadline (${TIMEOUT_MS} ms + 10 s)`,
      pass: after.status === 422,
    });
    expect(after.status).toBe(422);
    expect(after.errMsg).toMatch(/\(interrupted\): the extraction ended without a result/);
    expect(again).toEqual(after);
    expect(reruns).toBe(0);
  });
});
