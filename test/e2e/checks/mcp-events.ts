import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { Api, smtpSend } from '../support/clients.js';
import type { E2eEnv } from '../support/environment.js';
import { figure, zero } from '../support/figures.js';
import { kubectl, podsOf, portForward, sleep, waitFor, type Forward } from '../support/kubectl.js';
import { SINK_HTTP_PORT } from '../support/sink.js';
import type { Reach } from './channels.js';
import type { Identity } from './operator.js';

// The MCP Events extension (io.modelcontextprotocol/events) through the chart's Services, spoken
// as a 2026-07-28 client does on the wire (the envelope in `_meta`, the routing headers beside it;
// test/mcp/modern.test.ts): an events/stream held on each api replica and on the Service receives
// mail that arrived on port 25 of the smtp Service (another process: the stream is woken by the
// bus and reads the shared log); an events/subscribe webhook subscription, its lease refreshed by
// the client, keeps delivering, signed, through `kubectl rollout restart` of the api Deployment,
// and a stream held through the same rollout resumes from its cursor with no gap.

const SUITE = 'mcp events';
const MODERN = '2026-07-28';
const EVENT = 'message.received';
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': {},
};
/** A held stream says something (at least a heartbeat) this often (MCP_EVENTS_HEARTBEAT, 15 s): silence twice that long is a dead connection. */
const STREAM_SILENCE_MS = 35_000;

let nextId = 1;

function mcpPost(base: string, token: string, method: string, params: Record<string, unknown>, signal: AbortSignal) {
  return fetch(`${base}/mcp`, {
    method: 'POST',
    signal,
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token}`,
      'mcp-protocol-version': MODERN,
      'mcp-method': method,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta: ENVELOPE } }),
  });
}

/** The JSON-RPC messages of an SSE body (`data:` lines of each frame). */
function sseMessages(text: string): any[] {
  return text
    .split(/\r?\n\r?\n/)
    .map((frame) =>
      frame
        .split(/\r?\n/)
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trim())
        .join(''),
    )
    .filter(Boolean)
    .map((data) => JSON.parse(data));
}

/** One 2026-07-28 request; resolves to its result (a JSON answer, or the response in an SSE answer), throws on anything else. */
async function mcpRequest(base: string, token: string, method: string, params: Record<string, unknown>) {
  const res = await mcpPost(base, token, method, params, AbortSignal.timeout(30_000));
  const text = await res.text();
  let messages: any[];
  try {
    messages = (res.headers.get('content-type') ?? '').includes('text/event-stream')
      ? sseMessages(text)
      : [JSON.parse(text)];
  } catch {
    messages = [];
  }
  const answer = messages.find((m) => m && ('result' in m || 'error' in m));
  if (answer?.error) throw new Error(`${method}: JSON-RPC ${answer.error.code} ${answer.error.message}`);
  if (res.status !== 200 || !answer) throw new Error(`${method}: HTTP ${res.status} ${text.slice(0, 160)}`);
  return answer.result;
}

interface StreamMessage {
  method?: string;
  params?: any;
  at: number;
}

interface HeldStream {
  messages: StreamMessage[];
  /** When the stream last said anything (heartbeats included). */
  lastAt(): number;
  /** Resolves when the stream ends: 'closed' (by us), 'ended' (by the server) or 'error: …'. */
  ended: Promise<string>;
  close(): void;
}

/** An events/stream request held open; every SSE message is kept with the time it arrived. */
async function holdEventStream(
  base: string,
  token: string,
  params: Record<string, unknown>,
  onMessage: (m: StreamMessage) => void = () => undefined,
): Promise<HeldStream> {
  const abort = new AbortController();
  const connectTimer = setTimeout(() => abort.abort(), 30_000);
  let res: Response;
  try {
    res = await mcpPost(base, token, 'events/stream', params, abort.signal);
  } finally {
    clearTimeout(connectTimer);
  }
  if (res.status !== 200 || !(res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    const text = await res.text().catch(() => '');
    throw new Error(
      `events/stream via ${base}: HTTP ${res.status} ${res.headers.get('content-type')} ${text.slice(0, 160)}`,
    );
  }
  const messages: StreamMessage[] = [];
  let last = Date.now();
  const ended = (async () => {
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    try {
      for (;;) {
        const chunk = await reader.read();
        if (chunk.done) return 'ended';
        last = Date.now();
        buffer += chunk.value;
        let end: number;
        while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
          for (const message of sseMessages(frame)) {
            const m = { ...message, at: last } as StreamMessage;
            messages.push(m);
            onMessage(m);
          }
        }
      }
    } catch (err) {
      return abort.signal.aborted ? 'closed' : `error: ${(err as Error).message}`;
    }
  })();
  return { messages, lastAt: () => last, ended, close: () => abort.abort() };
}

const activeOf = (s: HeldStream) =>
  waitFor(
    'notifications/events/active',
    async () => s.messages.find((m) => m.method === 'notifications/events/active'),
    20_000,
    100,
  );

/** The occurrences of the stream for the message with this subject. */
const eventsFor = (s: HeldStream, subject: string) =>
  s.messages.filter((m) => m.method === 'notifications/events/event' && m.params?.data?.data?.subject === subject);

/**
 * An events/stream on each api pod (`kubectl port-forward pod/…`) and one through the api Service;
 * one message arrives on port 25 of the smtp Service: each stream gets its message.received once,
 * the same occurrence everywhere, within seconds (the bus, not the heartbeat's re-read); a stream
 * opened later from the first stream's cursor replays that occurrence.
 */
export async function mcpEventStreams(env: E2eEnv, reach: Reach, agent: Identity): Promise<void> {
  const pods = (await podsOf(env.namespace, 'app.kubernetes.io/component=api')).filter((p) => p.ready && !p.deleting);
  const forwards: Forward[] = [];
  const streams: Array<{ via: string; stream: HeldStream }> = [];
  const params = { name: EVENT, arguments: {}, cursor: null };
  try {
    for (const pod of pods) {
      const f = await portForward(env.namespace, `pod/${pod.name}`, 8080);
      forwards.push(f);
      streams.push({
        via: pod.name,
        stream: await holdEventStream(`http://127.0.0.1:${f.port}`, agent.token, params),
      });
    }
    const service = await holdEventStream(reach.apiBase, agent.token, params);
    streams.push({ via: `service ${reach.apiBase}`, stream: service });
    const active = await Promise.all(streams.map((s) => activeOf(s.stream)));
    const serviceCursor: string = active[active.length - 1]!.params.cursor;

    const subject = `e2e mcp stream ${Date.now()}`;
    const started = Date.now();
    const reply = await smtpSend(reach.mx, {
      from: 'events@outside.example',
      to: agent.address,
      subject,
      text: 'push',
    });
    await waitFor(
      'every stream got message.received',
      async () => streams.every((s) => eventsFor(s.stream, subject).length > 0),
      30_000,
      100,
    ).catch(() => false);
    await sleep(1000); // a second copy, if one were coming, would come now
    const got = streams.map((s) => ({ via: s.via, events: eventsFor(s.stream, subject) }));
    const delivered = got.filter((g) => g.events.length > 0);
    const latencies = delivered.map((g) => (g.events[0]!.at - started) / 1000);
    const eventIds = new Set(delivered.map((g) => g.events[0]!.params.eventId as string));
    const repeated = got.filter((g) => g.events.length > 1).length;
    const allDelivered = delivered.length === streams.length && pods.length >= 2;
    figure({
      suite: SUITE,
      name: `events/stream (${MODERN}) on each of ${pods.length} api pods + 1 via the Service: ${EVENT} of mail on port 25 (smtp Service), delivered`,
      value: `${delivered.length}/${streams.length}${repeated ? `, ${repeated} stream(s) got it twice` : ''}${eventIds.size > 1 ? `, ${eventIds.size} different eventIds` : ''}${reply.startsWith('250') ? '' : `, smtp: ${reply.slice(0, 60)}`}`,
      target: `${streams.length}/${streams.length}, once each, one eventId`,
      pass: allDelivered && repeated === 0 && eventIds.size === 1,
    });
    const slowest = latencies.length ? Math.max(...latencies) : NaN;
    figure({
      suite: SUITE,
      name: 'events/stream: send on port 25 → notifications/events/event, slowest of the streams (s)',
      value: allDelivered ? slowest : `${delivered.length}/${streams.length} delivered in 30 s`,
      target: '≤ 12 s (woken by the bus, not the 15 s heartbeat)',
      pass: allDelivered && slowest <= 12,
    });
    console.log(`   per stream (s): ${got.map((g, i) => `${g.via} ${latencies[i] ?? 'none'}`).join(', ')}`);

    // The cursor: a new stream from the Service stream's starting cursor replays the occurrence, once.
    const resumed = await holdEventStream(reach.apiBase, agent.token, { ...params, cursor: serviceCursor });
    streams.push({ via: 'resumed', stream: resumed });
    await waitFor('the replayed occurrence', async () => eventsFor(resumed, subject).length > 0, 20_000, 100).catch(
      () => false,
    );
    await sleep(500);
    const replayed = eventsFor(resumed, subject);
    const first = resumed.messages.find((m) => m.method)?.method;
    const same = replayed.length === 1 && eventIds.has(replayed[0]!.params.eventId);
    figure({
      suite: SUITE,
      name: 'events/stream resumed from the earlier cursor (via the Service): active first, the same occurrence replayed once',
      value: `${first ?? 'nothing'}, ${replayed.length} cop${replayed.length === 1 ? 'y' : 'ies'}${replayed.length && !same ? ' (another eventId)' : ''}`,
      target: 'notifications/events/active, 1 copy, same eventId',
      pass: first === 'notifications/events/active' && same,
    });
  } finally {
    for (const s of streams) s.stream.close();
    for (const f of forwards) f.stop();
  }
}

interface Receipt {
  webhookId: string;
  subscriptionId: string;
  messageId: string;
  subject: string;
  verified: boolean;
  problem: string;
  at: number;
}

/** A client's stream that reconnects from its last cursor when the connection ends or goes silent. */
function reconnectingStream(base: string, token: string) {
  let running = true;
  let cursor: string | null = null;
  let current: HeldStream | null = null;
  const events: StreamMessage[] = [];
  const ends: string[] = [];
  let connectFailures = 0;
  let active = false;
  const loop = (async () => {
    while (running) {
      let s: HeldStream;
      try {
        s = await holdEventStream(base, token, { name: EVENT, arguments: {}, cursor }, (m) => {
          if (typeof m.params?.cursor === 'string') cursor = m.params.cursor;
          if (m.method === 'notifications/events/event') events.push(m);
          if (m.method === 'notifications/events/active') active = true;
        });
      } catch {
        connectFailures++;
        await sleep(1000);
        continue;
      }
      current = s;
      let finished = false;
      const silent = (async () => {
        while (running && !finished && Date.now() - s.lastAt() < STREAM_SILENCE_MS) await sleep(1000);
        return running ? 'silent' : 'closed';
      })();
      const why = await Promise.race([s.ended, silent]);
      finished = true;
      s.close();
      if (running) ends.push(why);
    }
  })();
  return {
    isActive: () => active,
    events,
    ends,
    connectFailures: () => connectFailures,
    async stop() {
      running = false;
      current?.close();
      await loop;
    },
  };
}

/**
 * A webhook subscription (events/subscribe, a 60 s lease the client refreshes every 5 s through
 * the api Service) to a receiver in the cluster (the sink's /hooks: the worker pods deliver
 * there), mail on port 25 before, during and after `kubectl rollout restart` of the api
 * Deployment: every message delivered (matched by its message id), signed, none twice, the lease
 * never lapsing; and a stream held through the rollout, resumed from its cursor, sees each once.
 */
export async function mcpWebhookThroughRollout(env: E2eEnv, reach: Reach, agent: Identity): Promise<void> {
  const sink = await portForward(env.namespace, 'svc/sink', SINK_HTTP_PORT);
  const path = `/hooks/mcp-${randomBytes(4).toString('hex')}`;
  const url = `http://sink.${env.namespace}.svc.cluster.local:${SINK_HTTP_PORT}${path}`;
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const subscribeParams = {
    name: EVENT,
    arguments: {},
    delivery: { mode: 'webhook', url, secret },
    ttlMs: 60_000,
  };
  let running = true;
  const loops: Promise<void>[] = [];
  const stream = reconnectingStream(reach.apiBase, agent.token);
  try {
    const sub = await mcpRequest(reach.apiBase, agent.token, 'events/subscribe', subscribeParams);
    if (typeof sub?.id !== 'string') throw new Error(`events/subscribe answered ${JSON.stringify(sub).slice(0, 160)}`);
    console.log(`   subscription ${sub.id}, refreshBefore ${sub.refreshBefore}, receiver ${url}`);
    await waitFor('the stream to hold through the rollout active', async () => stream.isActive(), 20_000, 100);

    // The receiver, read every second; each delivery checked as it comes (the verifier also checks
    // that webhook-timestamp is recent, so it runs within seconds of the delivery).
    const receipts: Receipt[] = [];
    const verifier = new Webhook(secret);
    let seen = 0;
    const collect = async () => {
      const res = await fetch(`http://127.0.0.1:${sink.port}/hooks?since=${seen}`, {
        signal: AbortSignal.timeout(10_000),
      });
      const hooks = (await res.json()) as Array<{ path: string; headers: Record<string, string>; body: string }>;
      seen += hooks.length;
      for (const h of hooks.filter((x) => x.path === path)) {
        const problems: string[] = [];
        let verified = false;
        try {
          verifier.verify(h.body, {
            'webhook-id': h.headers['webhook-id'] ?? '',
            'webhook-timestamp': h.headers['webhook-timestamp'] ?? '',
            'webhook-signature': h.headers['webhook-signature'] ?? '',
          });
          verified = true;
        } catch (err) {
          problems.push(`signature: ${(err as Error).message}`);
        }
        let occurrence: any = {};
        try {
          occurrence = JSON.parse(h.body);
        } catch {
          problems.push('body is not JSON');
        }
        if (occurrence.eventId !== h.headers['webhook-id']) problems.push('eventId ≠ webhook-id');
        if (h.headers['x-mcp-subscription-id'] !== sub.id) problems.push('X-MCP-Subscription-Id');
        if (occurrence.name !== EVENT) problems.push(`name ${occurrence.name}`);
        receipts.push({
          webhookId: h.headers['webhook-id'] ?? '',
          subscriptionId: h.headers['x-mcp-subscription-id'] ?? '',
          messageId: occurrence.data?.data?.messageId ?? '',
          subject: occurrence.data?.data?.subject ?? '',
          verified,
          problem: problems.join('; '),
          at: Date.now(),
        });
      }
    };
    let collectErrors = 0;
    loops.push(
      (async () => {
        while (running) {
          await collect().catch(() => collectErrors++);
          await sleep(1000);
        }
        await collect().catch(() => collectErrors++);
      })(),
    );

    // The client's lease: events/subscribe again (same token, url, type, mailbox: a refresh).
    const lease = {
      refreshBefore: Date.parse(sub.refreshBefore),
      attempts: 0,
      ok: [] as number[],
      failures: [] as string[],
      otherIds: new Set<string>(),
      lapsed: false,
      shortened: false,
    };
    loops.push(
      (async () => {
        let due = Date.now() + 5000;
        while (running) {
          await sleep(500);
          if (Date.now() < due) continue;
          lease.attempts++;
          try {
            const again = await mcpRequest(reach.apiBase, agent.token, 'events/subscribe', subscribeParams);
            const now = Date.now();
            if (again.id !== sub.id) lease.otherIds.add(String(again.id));
            if (now > lease.refreshBefore) lease.lapsed = true;
            const next = Date.parse(again.refreshBefore);
            if (!(next >= lease.refreshBefore)) lease.shortened = true;
            lease.refreshBefore = next;
            lease.ok.push(now);
            due = now + 5000;
          } catch (err) {
            lease.failures.push(String((err as Error).message).slice(0, 80));
            due = Date.now() + 1000; // a client retries soon: the lease is what is at stake
          }
        }
      })(),
    );

    // Mail on port 25: before, during and after the rollout.
    const sent: Array<{ subject: string; phase: string; reply: string }> = [];
    const stamp = Date.now();
    const send = async (phase: string) => {
      const subject = `e2e mcp hook ${phase} ${sent.length + 1} ${stamp}`;
      const reply = await smtpSend(reach.mx, {
        from: 'hooks@outside.example',
        to: agent.address,
        subject,
        text: `webhook ${phase}`,
      }).catch((err) => `error: ${(err as Error).message}`);
      sent.push({ subject, phase, reply });
    };
    for (let i = 0; i < 3; i++) {
      await send('before');
      await sleep(1000);
    }
    const apiPods = 'app.kubernetes.io/component=api';
    const before = new Set((await podsOf(env.namespace, apiPods)).map((p) => p.name));
    const deployment = `deploy/${env.name('api')}`;
    const rollStarted = Date.now();
    const restart = await kubectl(['-n', env.namespace, 'rollout', 'restart', deployment], { allowFail: true });
    const rolled = (async () => {
      if (!restart.ok) return `rollout restart: ${restart.stderr.trim().slice(0, 120)}`;
      const status = await kubectl(['-n', env.namespace, 'rollout', 'status', deployment, '--timeout=300s'], {
        allowFail: true,
        timeoutMs: 320_000,
      });
      if (!status.ok) return `rollout status: ${status.stderr.trim().slice(0, 120)}`;
      // Until every old pod is gone: their preStop sleep and drain are part of the rollout.
      const gone = await waitFor(
        'every api pod of before the restart gone',
        async () => !(await podsOf(env.namespace, apiPods)).some((p) => before.has(p.name)),
        180_000,
        1000,
      ).catch(() => false);
      return gone ? 'ok' : 'old api pods still present after 180 s';
    })();
    let rolling = true;
    void rolled.finally(() => (rolling = false));
    while (rolling) {
      await send('during');
      await sleep(1500);
    }
    const rollout = await rolled;
    const rollSeconds = Math.round((Date.now() - rollStarted) / 1000);
    for (let i = 0; i < 3; i++) {
      await send('after');
      await sleep(1000);
    }
    const acknowledged = sent.filter((s) => s.reply.startsWith('250'));
    const subjects = new Set(acknowledged.map((s) => s.subject));
    await waitFor(
      'every acknowledged message at the receiver',
      async () => acknowledged.every((s) => receipts.some((r) => r.subject === s.subject)),
      90_000,
      1000,
    ).catch(() => false);
    await sleep(3000); // a duplicate, if one were coming, would come now
    running = false;
    await Promise.all(loops);
    if (Date.now() > lease.refreshBefore) lease.lapsed = true;
    await waitFor(
      'the held stream seeing every acknowledged message',
      async () => acknowledged.every((s) => stream.events.some((e) => e.params?.data?.data?.subject === s.subject)),
      30_000,
      500,
    ).catch(() => false);
    await stream.stop();

    // Match by message id: the mailbox's own record of each acknowledged message.
    const inbox = await new Api(reach.apiBase, agent.token).call('GET', '/api/messages?direction=inbound&limit=200');
    const stored = new Map<string, string>(
      (inbox.data?.items ?? [])
        .filter((m: any) => subjects.has(m.subject))
        .map((m: any) => [m.subject as string, m.messageId as string]),
    );
    const ours = receipts; // everything delivered to this subscription's URL
    const deliveredIds = new Set(ours.map((r) => r.messageId));
    const delivered = acknowledged.filter((s) => stored.has(s.subject) && deliveredIds.has(stored.get(s.subject)!));
    const lost = acknowledged.filter((s) => !delivered.includes(s));
    const count = (phase: string) => acknowledged.filter((s) => s.phase === phase).length;
    const refused = sent.length - acknowledged.length;
    console.log(
      `   sent ${sent.length} (${count('before')} before, ${count('during')} during, ${count('after')} after), ${refused} refused; stored ${stored.size}; receipts ${ours.length}; rollout ${rollout} in ${rollSeconds} s`,
    );
    if (lost.length)
      console.log(`   lost: ${lost.map((s) => `${s.subject} (${stored.get(s.subject) ?? 'not stored'})`).join(', ')}`);
    figure({
      suite: SUITE,
      name: `webhook subscription: mail on port 25 before / during / after kubectl rollout restart of the api, at the receiver (by message id)`,
      value: `${delivered.length}/${sent.length} (${count('before')}+${count('during')}+${count('after')}; rollout ${rollout === 'ok' ? `${rollSeconds} s` : rollout})${refused ? `, ${refused} refused by smtp` : ''}${stored.size < acknowledged.length ? `, ${acknowledged.length - stored.size} not in the mailbox` : ''}`,
      target: 'N/N, ≥ 1 sent during the rollout',
      pass:
        rollout === 'ok' &&
        refused === 0 &&
        delivered.length === sent.length &&
        count('during') >= 1 &&
        sent.length > 0,
    });
    const perWebhookId = new Map<string, number>();
    for (const r of ours) perWebhookId.set(r.webhookId, (perWebhookId.get(r.webhookId) ?? 0) + 1);
    const duplicates = [...perWebhookId.values()].reduce((n, c) => n + c - 1, 0);
    zero(
      SUITE,
      `webhook subscription: duplicate deliveries (same webhook-id again, of ${ours.length} received)`,
      duplicates,
    );
    zero(
      SUITE,
      `webhook subscription: acknowledged mail never delivered (lost, of ${acknowledged.length})`,
      lost.length,
    );
    const verified = ours.filter((r) => r.verified && !r.problem).length;
    const problems = [...new Set(ours.filter((r) => r.problem).map((r) => r.problem))];
    figure({
      suite: SUITE,
      name: 'webhook deliveries verified: Standard Webhooks signature (standardwebhooks), eventId = webhook-id, X-MCP-Subscription-Id',
      value: `${verified}/${ours.length}${problems.length ? `: ${problems.join(' | ').slice(0, 120)}` : ''}${collectErrors ? `, ${collectErrors} receiver reads failed` : ''}`,
      target: 'all',
      pass: ours.length > 0 && verified === ours.length,
    });
    const duringRoll = lease.ok.filter((t) => t >= rollStarted && t <= rollStarted + rollSeconds * 1000).length;
    figure({
      suite: SUITE,
      name: 'lease (ttlMs 60 s) refreshed by events/subscribe every 5 s via the api Service: ok / attempts, during the rollout, same id, lapsed',
      value: `${lease.ok.length}/${lease.attempts}, ${duringRoll} during, ${lease.otherIds.size ? `other ids ${[...lease.otherIds].join(' ')}` : 'same id'}, ${lease.lapsed ? 'lapsed' : 'never lapsed'}${lease.shortened ? ', refreshBefore went back' : ''}${lease.failures.length ? `; failed: ${[...new Set(lease.failures)].join(' | ').slice(0, 100)}` : ''}`,
      target: '≥ 1 during the rollout, same id, never lapsed',
      pass: duringRoll >= 1 && lease.otherIds.size === 0 && !lease.lapsed && !lease.shortened,
    });
    const streamed = new Map<string, number>();
    for (const e of stream.events) {
      const subject = e.params?.data?.data?.subject;
      if (subjects.has(subject)) streamed.set(subject, (streamed.get(subject) ?? 0) + 1);
    }
    const streamDuplicates = [...streamed.values()].reduce((n, c) => n + c - 1, 0);
    figure({
      suite: SUITE,
      name: 'events/stream via the Service held through the rollout, reconnected from its last cursor: messages seen, duplicates, reconnects',
      value: `${streamed.size}/${acknowledged.length}, ${streamDuplicates} duplicates, ${stream.ends.length} reconnects (${[...new Set(stream.ends)].join(', ') || 'none'})${stream.connectFailures() ? `, ${stream.connectFailures()} connects refused` : ''}`,
      target: `all, 0 duplicates`,
      pass: acknowledged.length > 0 && streamed.size === acknowledged.length && streamDuplicates === 0,
    });
    await mcpRequest(reach.apiBase, agent.token, 'events/unsubscribe', {
      name: EVENT,
      arguments: {},
      delivery: { mode: 'webhook', url },
    }).catch((err) => console.warn(`   events/unsubscribe: ${(err as Error).message}`));
  } finally {
    running = false;
    await Promise.all(loops).catch(() => undefined);
    await stream.stop().catch(() => undefined);
    sink.stop();
  }
}
