import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { ManualClock } from '../support/tenants.js';
import { serviceProcess, Supervisor, type ServiceProcess } from '../support/processes.js';
import { rowsOf, sendBody, twoMailboxes, waitFor } from '../delivery/helpers.js';
import { recordFigure, zeroFigure } from './support/figures.js';
import { FULL } from './support/scale.js';

// The outbound policy under concurrency and crashes: approve/reject races (one conditional UPDATE decides),
// approval while the delivery worker is killed with SIGKILL (the outbox job commits with the
// approval, so delivery happens exactly once), and two agents answering each other's mail (the
// loop guard's reply budget bounds the exchange).

const PAIRS = 50;
const KILL_MESSAGES = FULL ? 40 : 16;
const KILLS = FULL ? 4 : 2;

describe('approval gate under races and worker kill -9', () => {
  let server: TestServer;
  let worker: ServiceProcess;
  let supervisor: Supervisor;
  let world: Awaited<ReturnType<typeof twoMailboxes>>;
  const q = rowsOf(() => server);

  beforeAll(async () => {
    // The API in this process; the delivery worker a separate process on the same database, so it
    // can be killed with SIGKILL while approvals commit.
    server = await startTestServer({ engine: 'postgres', env: { DATABASE_POOL_MAX: '20' } });
    world = await twoMailboxes(server, { sendRateLimitPerMinute: 100_000 });
    const policy = await server
      .api(world.domain.token)
      .put(`/api/domain/mailboxes/${world.a.mailboxId}/policy`, { approval: 'all' });
    expect(policy.status).toBe(200);
    worker = await serviceProcess(
      {
        DATABASE_URL: server.databaseUrl!,
        MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
        WORKER_POLL_INTERVAL: '50ms',
        // A killed worker's jobs wait out its lease (60 s by default; renewed every third of it
        // while a worker lives), so each kill would cost a minute of waiting.
        WORKER_LEASE: '3s',
        LOG_LEVEL: 'warn',
      },
      'worker',
    );
    await worker.start();
    supervisor = new Supervisor(worker);
  }, 180_000);
  afterAll(async () => {
    await worker?.stop();
    await server?.close();
  });

  async function holdMessages(n: number, tag: string): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const res = await server
        .api(world.a.token)
        .post('/api/messages/send', sendBody(world.b.address, { subject: `${tag}-${i}` }));
      expect(res.body.data?.status, JSON.stringify(res.body)).toBe('pending_approval');
      ids.push(res.body.data.messageId);
    }
    return ids;
  }

  /** Inbound copies in B per outbound message of A (joined by Message-ID). */
  async function copiesOf(ids: string[]): Promise<Map<string, number>> {
    const rows = await q`select o.id, count(c.id)::int as n from message o
      left join message c on c.internet_message_id = o.internet_message_id and c.mailbox_id = ${world.b.mailboxId}
      where o.id = any(${ids}::text[]) group by o.id`;
    return new Map(rows.map((r: any) => [r.id, r.n]));
  }

  it(`${PAIRS} concurrent approve/reject pairs: exactly one decision each, 0 double deliveries`, async () => {
    const ids = await holdMessages(PAIRS, 'race');
    const approver = server.api(world.domain.token);
    const answers = await Promise.all(
      ids.flatMap((id) => [approver.post(`/api/messages/${id}/approve`), approver.post(`/api/messages/${id}/reject`)]),
    );
    let badPairs = 0;
    for (let i = 0; i < PAIRS; i++) {
      const [a, r] = [answers[2 * i]!, answers[2 * i + 1]!];
      const won = [a, r].filter((x) => x.status === 200 && x.body.data.changed).length;
      const lost = [a, r].filter((x) => x.status === 409).length;
      if (won !== 1 || lost !== 1) badPairs++;
    }
    const decisions = await q`select message_id, count(*)::int as n from audit_entry
      where message_id = any(${ids}::text[]) and decision in ('approved', 'rejected') group by message_id`;
    const notOne = ids.length - decisions.filter((d: any) => d.n === 1).length;
    const approved = (
      await q`select id from message where id = any(${ids}::text[]) and approval_status = 'approved'`
    ).map((r: any) => r.id as string);
    await waitFor(
      async () => [...(await copiesOf(approved)).values()].every((n) => n >= 1),
      120_000,
      'approved messages delivered',
    );
    await new Promise((r) => setTimeout(r, 1000)); // a late second delivery would show now
    const copies = await copiesOf(ids);
    const doubles = [...copies.values()].filter((n) => n > 1).length;
    const rejectedDelivered = ids.filter((id) => !approved.includes(id) && (copies.get(id) ?? 0) > 0).length;
    zeroFigure('outbound policy', `approve/reject pairs (${PAIRS}) not answered one 200 + one 409`, badPairs);
    zeroFigure('outbound policy', 'held messages with other than exactly one decision', notOne);
    zeroFigure('outbound policy', 'double deliveries after racing decisions', doubles);
    zeroFigure('outbound policy', 'rejected messages delivered', rejectedDelivered);
    expect({ badPairs, notOne, doubles, rejectedDelivered }).toEqual({
      badPairs: 0,
      notOne: 0,
      doubles: 0,
      rejectedDelivered: 0,
    });
  }, 300_000);

  it(`approve ${KILL_MESSAGES} held messages while the worker is killed with SIGKILL ${KILLS}×: each delivered once`, async () => {
    const ids = await holdMessages(KILL_MESSAGES, 'kill');
    const approver = server.api(world.domain.token);
    const per = Math.ceil(KILL_MESSAGES / (KILLS + 1));
    for (let k = 0; k <= KILLS; k++) {
      const batch = ids.slice(k * per, (k + 1) * per);
      // Approve the batch while the worker is busy delivering the previous one, then kill it mid-way.
      const approving = Promise.all(batch.map((id) => approver.post(`/api/messages/${id}/approve`)));
      if (k < KILLS) {
        await new Promise((r) => setTimeout(r, 150));
        await supervisor.crash();
      }
      for (const res of await approving) expect(res.status).toBe(200);
    }
    await waitFor(
      async () => [...(await copiesOf(ids)).values()].every((n) => n >= 1),
      180_000,
      'every approved message delivered after the crashes',
    );
    await new Promise((r) => setTimeout(r, 1000));
    const copies = await copiesOf(ids);
    const notOnce = ids.filter((id) => copies.get(id) !== 1).length;
    zeroFigure(
      'outbound policy',
      `approved during ${KILLS}× worker kill -9: messages not delivered exactly once`,
      notOnce,
    );
    expect(supervisor.restarts).toBe(KILLS);
    expect(notOnce).toBe(0);
  }, 600_000);
});

describe('loop guard: two agents answering every mail', () => {
  let server: TestServer;
  let clock: ManualClock;
  const LIMIT = 10;

  beforeAll(async () => {
    clock = new ManualClock();
    server = await startTestServer({
      engine: 'postgres',
      clock,
      roles: ['api', 'worker'],
      env: { WORKER_POLL_INTERVAL: '20ms', AUTO_REPLY_LIMIT_PER_HOUR: String(LIMIT) },
    });
  }, 120_000);
  afterAll(() => server?.close());

  it('stop within the per-counterparty reply budget (10 simulated minutes)', async () => {
    const world = await twoMailboxes(server, { sendRateLimitPerMinute: 100_000 });
    const q = rowsOf(() => server);
    const agents = [world.a, world.b];
    const first = await server.api(world.a.token).post('/api/messages/send', sendBody(world.b.address));
    expect(first.status).toBe(202);
    let limited = 0;
    let retryAfter = 0;
    const STEP_MS = 10_000;
    for (let t = 0; t < 10 * 60_000; t += STEP_MS) {
      // Deliver what was sent in this step (the worker runs in real time), then let each agent answer.
      await waitFor(
        async () => (await q`select 1 from outbox_job where status = 'pending'`).length === 0,
        30_000,
        'deliveries',
      );
      for (const agent of agents) {
        const inbox = await server.api(agent.token).get('/api/messages?direction=inbound&limit=200');
        for (const m of inbox.body.data.items.filter((x: any) => !x.isRead)) {
          await server.api(agent.token).put(`/api/messages/${m.messageId}/read-state`, { isRead: true });
          const reply = await server
            .api(agent.token)
            .post(`/api/messages/${m.messageId}/reply`, { bodyText: 'Thanks, noted. Anything else?' });
          if (reply.status === 429) {
            limited++;
            retryAfter = Number(reply.headers.get('retry-after'));
          } else expect(reply.status, JSON.stringify(reply.body)).toBe(202);
        }
      }
      clock.advance(STEP_MS);
    }
    const [{ n }] = await q`select count(*)::int as n from message where direction = 'outbound'
      and mailbox_id = any(${[world.a.mailboxId, world.b.mailboxId]}::text[])`;
    const bound = 2 * LIMIT + 1;
    recordFigure({
      suite: 'outbound policy',
      name: 'messages two answering agents exchange in 10 simulated minutes',
      value: n,
      target: `≤ ${bound} (2 × AUTO_REPLY_LIMIT_PER_HOUR + 1)`,
      pass: n <= bound,
    });
    expect(n).toBeLessThanOrEqual(bound);
    expect(n).toBeGreaterThanOrEqual(2 * LIMIT); // agents within the budget are not stopped early
    expect(limited).toBeGreaterThan(0);
    expect(retryAfter).toBeGreaterThan(0);
    const audit = await server.api(world.domain.token).get('/api/domain/audit?limit=10');
    expect(audit.body.data.items.some((e: any) => e.rule === 'autoReplyLimit' && e.decision === 'refused')).toBe(true);
  }, 300_000);
});
