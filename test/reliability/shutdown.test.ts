import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, createScratchDatabase } from '../support/harness.js';
import { seedDomain, serviceProcess, type ServiceProcess } from '../support/processes.js';
import { SmtpWire, rfc5322, type Reply } from '../smtp/smtp-wire.js';
import { loadConfig } from '../../src/config/config.js';
import { startRuntime } from '../../src/runtime/runtime.js';
import { silentLogger } from '../../src/core/base/logger.js';
import { recordFigure, zeroFigure } from './support/figures.js';
import { scale } from './support/scale.js';

// SIGTERM during load: the smtp and api processes are stopped the way Kubernetes
// stops them (after the preStop sleep, SIGTERM, then SIGKILL at the end of the grace period)
// while clients are mid-session and mid-DATA. Sessions in flight get 421 4.3.2 (RFC 3463:
// system not accepting network messages), a message whose DATA completed is either answered
// 250 and stored or not acknowledged at all, and the process is gone within the chart's grace
// period minus its preStop sleep (SMTP_CLOSE_TIMEOUT = the chart's smtp.closeTimeoutSeconds at full size).

const SUITE = 'shutdown';
const chart = parse(
  readFileSync(path.resolve(import.meta.dirname, '../../charts/mailbox-service/values.yaml'), 'utf8'),
) as Record<string, Record<string, number>>;
/** What the process has after SIGTERM before the kubelet's SIGKILL: the grace period minus the preStop sleep. */
const budgetMs = (role: 'smtp' | 'api') =>
  (chart[role]!.terminationGracePeriodSeconds! - chart[role]!.preStopSleepSeconds!) * 1000;
/**
 * The chart's smtp.closeTimeoutSeconds at full size; 5 s at the short size, where the same is proven
 * (the sessions left at the close timeout get 421 4.3.2, the process exits inside the budget)
 * without waiting out the chart's 25 s.
 */
const CLOSE_TIMEOUT_S = scale(5, chart.smtp!.closeTimeoutSeconds!);
const LOADERS = scale(6, 12);
const API_CLIENTS = scale(12, 24);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
let env: Record<string, string>;
let mailbox: { address: string; token: string };
let db: pg.Client;

/**
 * Message-IDs of these, as stored (without angle brackets), that the database holds: stored as
 * messages, or (queued intake on 25 and 587, no worker runs here) in a queue's raw messages.
 */
async function stored(ids: string[]): Promise<Set<string>> {
  const rows = (
    await db.query<{ internet_message_id: string }>(
      `select internet_message_id from message where internet_message_id = any($1)`,
      [ids.flatMap((id) => [id, `<${id}>`])],
    )
  ).rows;
  const queued = (
    await db.query<{ id: string }>(
      `select w.mid as id from unnest($1::text[]) as w(mid)
        where exists (select 1 from inbound_queue q where position(convert_to('<' || w.mid || '>', 'UTF8') in q.raw) > 0)
          or exists (select 1 from submission_queue q where position(convert_to('<' || w.mid || '>', 'UTF8') in q.raw) > 0)`,
      [ids],
    )
  ).rows;
  return new Set([...rows.map((r) => r.internet_message_id.replace(/^<|>$/g, '')), ...queued.map((r) => r.id)]);
}

beforeAll(async () => {
  scratch = await createScratchDatabase();
  env = {
    DATABASE_URL: scratch.url,
    MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
    DATABASE_POOL_MAX: '6',
    SMTP_HOSTNAME: 'mx.shutdown.test',
  };
  const domain = await seedDomain(env);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'mbx-rel-seed-'));
  const seed = await startRuntime(loadConfig({ ...env, PORT: '0', HOST: '127.0.0.1', MAILBOX_DATA_DIR: dataDir }), {
    roles: ['api'],
    log: silentLogger,
  });
  try {
    const res = await apiClient(`http://127.0.0.1:${seed.httpPort}`, domain.token).post('/api/mailboxes', {
      address: `agent@${domain.name}`,
    });
    expect(res.status).toBe(201);
    mailbox = { address: res.body.data.mailbox.address, token: res.body.data.initialAccessToken };
  } finally {
    await seed.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  db = new pg.Client({ connectionString: scratch.url });
  await db.connect();
}, 120_000);

afterAll(async () => {
  await db?.end();
  await scratch?.drop();
}, 60_000);

/** What one SMTP client saw once SIGTERM was sent. */
interface SessionEnd {
  kind: string;
  reply: string | null;
}

describe('SIGTERM to the smtp process during SMTP load', () => {
  let smtp: ServiceProcess;
  afterAll(async () => {
    await smtp?.stop();
  }, 30_000);

  it('answers sessions in flight 421 4.3.2, loses nothing acknowledged, exits within the grace period', async () => {
    smtp = await serviceProcess(
      { ...env, SMTP_ALLOW_INSECURE_AUTH: 'true', SMTP_CLOSE_TIMEOUT: `${CLOSE_TIMEOUT_S}s` },
      'smtp',
    );
    await smtp.start();
    const { submission, mx } = smtp.ports;
    const acked: string[] = [];
    let sigtermAt = Infinity;
    const ends: SessionEnd[] = [];
    const shutdownReplies: string[] = [];
    /** Every reply a client read after SIGTERM that refused something. */
    const note = (r: Reply) => {
      if (r.code >= 400) shutdownReplies.push(r.last);
      return r;
    };
    let seq = 0;
    const nextId = (kind: string) => `${kind}-${++seq}-${randomBytes(4).toString('hex')}@client.shutdown.test`;
    // Port 25 refuses a From in a hosted domain without our DKIM signature (docs/contract.md, inbound
    // trust), so mail arriving there comes from an outside author.
    const mxWires = new WeakSet<SmtpWire>();
    const authorOf = (w: SmtpWire) => (mxWires.has(w) ? 'peer@client.shutdown.test' : mailbox.address);
    const message = (id: string, to: string, body = 'Shutdown load.', from = mailbox.address) =>
      `${rfc5322({ from, to, body, headers: [`Message-ID: <${id}>`] }).replace(/\r\n$/, '')}\r\n`;

    const login = async () => {
      const w = await SmtpWire.connect(submission);
      await w.ehlo();
      const r = await w.auth(mailbox.address, mailbox.token);
      expect(r.code).toBe(235);
      return w;
    };
    const mxSession = async () => {
      const w = await SmtpWire.connect(mx);
      await w.ehlo();
      mxWires.add(w);
      return w;
    };

    /** One transaction; 'acked' when the end of DATA got 250, else the refusing reply. */
    const transact = async (w: SmtpWire, kind: string, rcpt: string): Promise<Reply> => {
      for (const line of [`MAIL FROM:<${mailbox.address}>`, `RCPT TO:<${rcpt}>`]) {
        const r = await w.cmd(line);
        if (r.code !== 250) return r;
      }
      const d = await w.cmd('DATA');
      if (d.code !== 354) return d;
      const id = nextId(kind);
      w.write(`${message(id, rcpt, undefined, authorOf(w))}.\r\n`);
      const r = await w.reply(20_000);
      if (r.code === 250) acked.push(id);
      return r;
    };

    // Steady load: sessions doing back-to-back transactions on both listeners until refused.
    const loaders = Array.from({ length: LOADERS }, async (_, i) => {
      const onMx = i % 2 === 1;
      const w = onMx ? await mxSession() : await login();
      try {
        for (;;) {
          const r = await transact(
            w,
            onMx ? 'mx-load' : 'sub-load',
            onMx ? mailbox.address : `someone${i}@elsewhere.example`,
          );
          if (r.code !== 250) {
            if (Date.now() >= sigtermAt) note(r);
            return { kind: 'loader', reply: r.last };
          }
        }
      } catch (err) {
        // The connection closed without a final reply.
        return {
          kind: 'loader',
          reply: Date.now() >= sigtermAt ? null : `error before SIGTERM: ${(err as Error).message}`,
        };
      } finally {
        w.close();
      }
    });

    // Sessions sitting idle after AUTH, and sessions stuck in the middle of DATA.
    const idle = await Promise.all([login(), login(), mxSession()]);
    const stuck = await Promise.all([login(), mxSession(), mxSession()]);
    for (const w of stuck) {
      await w.cmd(`MAIL FROM:<${mailbox.address}>`, 250);
      await w.cmd(`RCPT TO:<${mailbox.address}>`, 250);
      await w.cmd('DATA', 354);
      w.write(message(nextId('stuck'), mailbox.address, undefined, authorOf(w)).slice(0, 120));
    }
    // Sessions in the middle of DATA that finish it after SIGTERM, inside the close timeout.
    const finishing = await Promise.all([login(), mxSession()]);
    const finishingIds = finishing.map(() => nextId('finishing'));
    const finishingText = finishingIds.map(
      (id, i) => `${message(id, mailbox.address, 'Finished after SIGTERM.', authorOf(finishing[i]!))}.\r\n`,
    );
    for (const [i, w] of finishing.entries()) {
      await w.cmd(`MAIL FROM:<${mailbox.address}>`, 250);
      await w.cmd(`RCPT TO:<${mailbox.address}>`, 250);
      await w.cmd('DATA', 354);
      w.write(finishingText[i]!.slice(0, 100));
    }

    const deadline = Date.now() + 30_000;
    while (acked.length < scale(30, 200) && Date.now() < deadline) await sleep(50);
    expect(acked.length).toBeGreaterThan(0);

    sigtermAt = Date.now();
    const exit = smtp.kill('SIGTERM');
    await sleep(Math.min(1000, (CLOSE_TIMEOUT_S * 1000) / 4));
    // Still closing (the stuck sessions hold it open), but no longer accepting.
    const refused = await SmtpWire.connect(submission, null).then(
      (w) => {
        w.close();
        return false;
      },
      () => true,
    );
    const finished = await Promise.all(
      finishing.map(async (w, i) => {
        w.write(finishingText[i]!.slice(100));
        const r = await w.reply(CLOSE_TIMEOUT_S * 1000 + 5000).catch(() => null);
        if (r?.code === 250) acked.push(finishingIds[i]!);
        else if (r) note(r);
        // The next command of a session in flight is refused: the server is shutting down.
        const next = r ? await w.cmd(`MAIL FROM:<${mailbox.address}>`).catch(() => null) : null;
        if (next) note(next);
        return { data: r?.last ?? null, next: next?.last ?? null };
      }),
    );
    const waiting = await Promise.all(
      [...idle, ...stuck].map(async (w, i) => {
        const r = await w.reply(CLOSE_TIMEOUT_S * 1000 + 5000).catch(() => null);
        if (r) note(r);
        return { kind: i < idle.length ? 'idle' : 'stuck mid-DATA', reply: r?.last ?? null };
      }),
    );
    const { code, signal, ms } = await exit;
    ends.push(
      ...(await Promise.all(loaders)),
      ...waiting,
      ...finished.map((f) => ({ kind: 'finishing DATA (next command)', reply: f.next })),
    );
    for (const w of [...idle, ...stuck, ...finishing]) w.close();

    const inFlight = ends;
    const got4_3_2 = inFlight.filter((e) => e.reply?.startsWith('421 4.3.2 ')).length;
    const wrong421 = shutdownReplies.filter((r) => r.startsWith('421') && !r.startsWith('421 4.3.2 '));
    const present = await stored(acked);
    const lost = acked.filter((id) => !present.has(id));
    const finishedAcked = finished.filter((f, i) => f.data?.startsWith('250') && present.has(finishingIds[i]!)).length;
    console.log(
      `[shutdown] smtp: ${acked.length} acknowledged, ${inFlight.length} sessions in flight at SIGTERM; ends: ${JSON.stringify(ends)}; exit ${code ?? signal} after ${ms} ms`,
    );

    const figures = [
      recordFigure({
        suite: SUITE,
        name: 'smtp: sessions in flight at SIGTERM answered 421 4.3.2',
        value: `${got4_3_2}/${inFlight.length}`,
        target: 'all',
        pass: got4_3_2 === inFlight.length && inFlight.length > 0,
      }),
      zeroFigure(SUITE, 'smtp: 421 replies after SIGTERM without 4.3.2', wrong421.length),
      zeroFigure(SUITE, `smtp: acknowledged (250) but lost, of ${acked.length}`, lost.length),
      recordFigure({
        suite: SUITE,
        name: 'smtp: DATA completed after SIGTERM, inside the close timeout: 250 and stored',
        value: `${finishedAcked}/${finishing.length}`,
        target: 'all',
        pass: finishedAcked === finishing.length,
      }),
      recordFigure({
        suite: SUITE,
        name: `smtp: exit after SIGTERM (close timeout ${CLOSE_TIMEOUT_S} s)`,
        value: `${ms} ms, ${code ?? signal}`,
        target: `≤ ${budgetMs('smtp')} ms (grace − preStop), exit 0`,
        pass: ms <= budgetMs('smtp') && code === 0,
      }),
      recordFigure({
        suite: SUITE,
        name: 'smtp: new connection while closing',
        value: refused ? 'refused' : 'accepted',
        target: 'refused',
        pass: refused,
      }),
    ];
    expect(figures.filter((x) => !x.pass).map((x) => `${x.name} = ${x.value} (target ${x.target})`)).toEqual([]);
    expect(wrong421).toEqual([]);
    expect(lost).toEqual([]);
    expect(got4_3_2).toBe(inFlight.length);
    expect(finishedAcked).toBe(finishing.length);
    expect(code).toBe(0);
    expect(ms).toBeLessThanOrEqual(budgetMs('smtp'));
  });
});

describe('SIGTERM to the api process with requests in flight', () => {
  let api: ServiceProcess;
  afterAll(async () => {
    await api?.stop();
  }, 30_000);

  it('finishes requests in flight, stores every 202, exits promptly', async () => {
    api = await serviceProcess(env, 'api');
    await api.start();
    const client = apiClient(api.url, mailbox.token);
    const acked: string[] = [];
    const requests: { startedAt: number; endedAt: number; status: number | string }[] = [];
    let sigtermAt = Infinity;
    let stop = false;
    const senders = Array.from({ length: API_CLIENTS }, async (_, c) => {
      for (let i = 0; !stop; i++) {
        const startedAt = Date.now();
        if (startedAt >= sigtermAt) break; // a client that saw the shutdown starts nothing new here
        const entry = { startedAt, endedAt: 0, status: 0 as number | string };
        requests.push(entry);
        try {
          const res = await client.post('/api/messages/send', {
            toAddress: `peer${c}@elsewhere.example`,
            subject: `api shutdown ${c}.${i}`,
            bodyText: 'x'.repeat(2000),
          });
          entry.status = res.status;
          if (res.status === 202) acked.push(res.body.data.messageId as string);
        } catch (err) {
          entry.status = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
        }
        entry.endedAt = Date.now();
      }
    });
    const deadline = Date.now() + 30_000;
    while (acked.length < scale(50, 300) && Date.now() < deadline) await sleep(50);
    sigtermAt = Date.now();
    const { code, signal, ms } = await api.kill('SIGTERM');
    stop = true;
    await Promise.all(senders);

    const inFlight = requests.filter((r) => r.startedAt < sigtermAt && (r.endedAt === 0 || r.endedAt >= sigtermAt));
    const unanswered = inFlight.filter((r) => typeof r.status !== 'number');
    const answered202 = inFlight.filter((r) => r.status === 202).length;
    const rows = (await db.query<{ id: string }>(`select id from message where id = any($1)`, [acked])).rows;
    const lost = acked.length - rows.length;
    console.log(
      `[shutdown] api: ${acked.length} acknowledged, ${inFlight.length} requests in flight at SIGTERM (${JSON.stringify(inFlight.map((r) => r.status))}); exit ${code ?? signal} after ${ms} ms`,
    );

    const figures = [
      zeroFigure(SUITE, `api: 202 acknowledged but not stored, of ${acked.length}`, lost),
      zeroFigure(
        SUITE,
        `api: requests in flight at SIGTERM left without a response, of ${inFlight.length} (${answered202} answered 202)`,
        unanswered.length,
      ),
      recordFigure({
        suite: SUITE,
        name: 'api: exit after SIGTERM',
        value: `${ms} ms, ${code ?? signal}`,
        target: `≤ ${budgetMs('api')} ms (grace − preStop), exit 0`,
        pass: ms <= budgetMs('api') && code === 0,
      }),
    ];
    expect(figures.filter((x) => !x.pass).map((x) => `${x.name} = ${x.value} (target ${x.target})`)).toEqual([]);
    expect(lost).toBe(0);
    expect(unanswered).toEqual([]);
    expect(inFlight.length).toBeGreaterThan(0);
    expect(code).toBe(0);
  });
});
