import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { allRoutes } from '../../src/channels/http/routes/index.js';
import type { RouteSpec } from '../../src/channels/http/route.js';
import { allTools } from '../../src/channels/mcp/tools/index.js';
import { ID_PREFIX, newId } from '../../src/core/base/ids.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import {
  createMatrixWorld,
  routeFixtures,
  routeKey,
  send,
  type FixtureCaller,
  type MatrixWorld,
  type RouteRequest,
} from '../support/route-fixtures.js';
import {
  ALL_SCOPES,
  bearer,
  buildCaller,
  matrixRows,
  type Expected,
  type Guarded,
  type TenantAnswers,
} from '../support/authz-matrix.js';
import {
  mintToken,
  seedHeldMessage,
  seedMessage,
  type DomainFixture,
  type MailboxFixture,
} from '../support/tenants.js';
import { seedMessageWithRaw } from '../transport/download-fixtures.js';
import { APPROVAL_LINK_CASES } from '../support/approval-link-fixtures.js';
import { connect } from '../realtime/client.js';
import { recordFigure, zeroFigure } from './support/figures.js';

// Authorization and tokens: the authorization matrix over every HTTP route, every MCP
// tool (through the SDK's own client) and the Socket.IO handshake, with the same rows for each
// (test/support/authz-matrix.ts): no token, malformed, unknown, expired, disabled, another
// mailbox, another domain, each missing scope. Then every object id of another tenant (message,
// thread, attachment, token, mailbox) on every route and tool that takes one: 404, exactly like an
// id that does not exist. The lists come from the route table and the registered tools, so a new
// route or tool without its case fails here.

const SUITE = 'authorization';
let server: TestServer;
let world: MatrixWorld;
const mismatches: string[] = [];
const checked = { http: 0, mcp: 0, socket: 0 };
const crossTenant = { calls: 0, non404: [] as string[] };
const uploadIdMismatches: string[] = [];

const routeByKey = new Map(allRoutes.map((r) => [routeKey(r), r]));
const guardOf = (key: string): RouteSpec => {
  const r = routeByKey.get(key);
  if (!r) throw new Error(`no route ${key}`);
  return r;
};

beforeAll(async () => {
  // Every row replies to the same seeded sender: the loop guard's reply budget is not under test here.
  server = await startTestServer({
    roles: ['api', 'realtime'],
    env: {
      SEND_RATE_LIMIT_PER_MINUTE: '1000000',
      AUTO_REPLY_LIMIT_PER_HOUR: '1000000',
      ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
      // Every row registers webhooks in the same domain: the webhook caps are not under test here.
      WEBHOOK_MAX_PER_DOMAIN: '10000',
      WEBHOOK_MAX_PER_MAILBOX: '1000',
    },
  });
  world = await createMatrixWorld(server);
  // The cross-tenant attackers hold every scope of their kind (bootstrap tokens lack MailboxApprove,
  // which would stop them at the scope check before any id is looked at).
  for (const m of [world.t.A1, world.t.B1])
    fullScope.set(
      m.mailboxId,
      (
        await mintToken(server, {
          kind: 'mailbox',
          domainId: m.domainId,
          mailboxId: m.mailboxId,
          scopes: ALL_SCOPES.mailbox,
        })
      ).token,
    );
});
afterAll(async () => {
  await server?.close();
});
const fullScope = new Map<string, string>();

const want = (expected: Expected, success: number | 'success'): number | 'success' =>
  expected === 'success' ? success : expected;

// ---------------------------------------------------------------------------------------------
// HTTP: every route of the route table.

describe('HTTP: every route', () => {
  it('has a fixture for every route, with otherMailbox for every route serving mailbox tokens', () => {
    expect(allRoutes.map(routeKey).filter((k) => !routeFixtures[k])).toEqual([]);
    expect(
      allRoutes
        .filter((r) => r.tokenKinds.includes('mailbox') && routeFixtures[routeKey(r)]?.otherMailbox === undefined)
        .map(routeKey),
    ).toEqual([]);
  });

  for (const r of allRoutes) {
    it(routeKey(r), async () => {
      const fixture = routeFixtures[routeKey(r)]!;
      const wrong: string[] = [];
      for (const row of matrixRows(r, fixture)) {
        const who = await row.caller(world);
        const req = await fixture.build(world, buildCaller(row, who, r));
        const res = await send(server, r.method, req, who.authorization);
        const expected = want(row.expected, r.status);
        checked.http++;
        const envelopeOk =
          res.body?.code === res.status && (res.status < 400 ? res.body.errMsg === null : res.body.data === null);
        if (res.status !== expected || !envelopeOk)
          wrong.push(
            `HTTP ${routeKey(r)} [${row.name}]: expected ${expected}, got ${res.status} ${res.body?.errMsg ?? ''}`,
          );
      }
      mismatches.push(...wrong);
      expect(wrong).toEqual([]);
    });
  }
});

// ---------------------------------------------------------------------------------------------
// Approval links: routes without a token whose credential is the link. The rows above check that a
// token changes nothing there; these check the link itself (used, expired, tampered, aimed at
// another tenant's message, already decided by a token).

describe('HTTP: approval links', () => {
  for (const c of APPROVAL_LINK_CASES) {
    it(c.name, async () => {
      const got = await c.attempt(world);
      checked.http++;
      if (got.status !== c.expected.status || got.errorCode !== c.expected.errorCode)
        mismatches.push(
          `approval link [${c.name}]: expected ${JSON.stringify(c.expected)}, got ${JSON.stringify(got)}`,
        );
      expect(got).toEqual(c.expected);
    });
  }
});

// ---------------------------------------------------------------------------------------------
// MCP: every registered tool, through the SDK client. Each tool names the HTTP route it equals
// (docs/api.md, MCP): its declared kinds and scope are the tool's, and its answers for another
// domain or mailbox are the route's.

interface ToolFixture extends TenantAnswers {
  route: string;
  args(w: MatrixWorld, c: FixtureCaller): Promise<Record<string, unknown>>;
}

const asDomain = (c: FixtureCaller, w: MatrixWorld) => (c.kind === 'domain' ? { mailboxAddress: w.t.A1.address } : {});
const answersOf = (key: string): TenantAnswers => {
  const f = routeFixtures[key]!;
  return { foreignDomain: f.foreignDomain, otherMailbox: f.otherMailbox };
};
const toolFixtures: Record<string, ToolFixture> = {
  list_messages: {
    route: 'GET /api/messages',
    ...answersOf('GET /api/messages'),
    args: async (w, c) => ({ ...asDomain(c, w), limit: 10 }),
  },
  get_message: {
    route: 'GET /api/messages/:messageId',
    ...answersOf('GET /api/messages/:messageId'),
    args: async (w) => ({ messageId: (await seedMessage(w.server, w.t.A1)).messageId }),
  },
  get_thread: {
    route: 'GET /api/threads/:threadId',
    ...answersOf('GET /api/threads/:threadId'),
    args: async (w) => ({ threadId: (await seedMessage(w.server, w.t.A1)).threadId }),
  },
  send_mail: {
    route: 'POST /api/messages/send',
    ...answersOf('POST /api/messages/send'),
    args: async (w) => ({
      mailboxAddress: w.t.A1.address,
      toAddress: 'someone@remote.example',
      subject: 'Hi',
      bodyText: 'Hello',
    }),
  },
  reply_message: {
    route: 'POST /api/messages/:messageId/reply',
    ...answersOf('POST /api/messages/:messageId/reply'),
    args: async (w) => ({
      messageId: (await seedMessage(w.server, w.t.A1)).messageId,
      mailboxAddress: w.t.A1.address,
      bodyText: 'Thanks',
    }),
  },
  set_read_state: {
    route: 'POST /api/messages/bulk-read-state',
    ...answersOf('POST /api/messages/bulk-read-state'),
    args: async (w, c) => ({ ...asDomain(c, w), ids: [(await seedMessage(w.server, w.t.A1)).messageId], isRead: true }),
  },
  delete_messages: {
    route: 'POST /api/messages/bulk-delete',
    ...answersOf('POST /api/messages/bulk-delete'),
    args: async (w, c) => ({ ...asDomain(c, w), ids: [(await seedMessage(w.server, w.t.A1)).messageId] }),
  },
  upload_attachment: {
    route: 'POST /api/messages/attachments',
    ...answersOf('POST /api/messages/attachments'),
    args: async (w) => ({
      mailboxAddress: w.t.A1.address,
      contentBase64: Buffer.from('hello').toString('base64'),
      filename: 'hello.txt',
      contentType: 'text/plain',
    }),
  },
  list_mailboxes: {
    route: 'GET /api/domain/mailboxes',
    ...answersOf('GET /api/domain/mailboxes'),
    args: async () => ({ limit: 5 }),
  },
  wait_for_message: {
    route: 'GET /api/messages/wait',
    ...answersOf('GET /api/messages/wait'),
    args: async (w, c) => ({ ...asDomain(c, w), timeoutMs: 0 }),
  },
  list_pending_approvals: {
    route: 'GET /api/messages',
    ...answersOf('GET /api/messages'),
    args: async (w, c) => ({ ...asDomain(c, w), limit: 10 }),
  },
  search_messages: {
    route: 'GET /api/messages/search',
    ...answersOf('GET /api/messages/search'),
    args: async (w, c) => ({ ...asDomain(c, w), q: 'hello is:unread' }),
  },
  get_verification_code: {
    route: 'GET /api/messages/verification-code',
    ...answersOf('GET /api/messages/verification-code'),
    args: async (w, c) => ({ ...asDomain(c, w), timeoutMs: 0 }),
  },
  get_attachment: {
    route: 'GET /api/messages/:messageId/attachments/:attachmentId/text',
    ...answersOf('GET /api/messages/:messageId/attachments/:attachmentId/text'),
    args: async (w) => {
      const m = await seedMessageWithRaw(w.server, w.t.A1);
      return { messageId: m.messageId, attachmentId: m.attachmentId };
    },
  },
  get_mailbox_storage: {
    route: 'GET /api/mailbox/storage',
    ...answersOf('GET /api/mailbox/storage'),
    args: async (w, c) => asDomain(c, w),
  },
  forward_message: {
    route: 'POST /api/messages/:messageId/forward',
    ...answersOf('POST /api/messages/:messageId/forward'),
    args: async (w) => ({
      messageId: (await seedMessage(w.server, w.t.A1)).messageId,
      mailboxAddress: w.t.A1.address,
      toAddress: 'someone@remote.example',
      bodyText: 'FYI',
    }),
  },
  list_threads: {
    route: 'GET /api/threads',
    ...answersOf('GET /api/threads'),
    args: async (w, c) => ({ ...asDomain(c, w), state: 'open' }),
  },
  set_thread_state: {
    route: 'PUT /api/threads/:threadId/state',
    ...answersOf('PUT /api/threads/:threadId/state'),
    args: async (w) => ({
      threadId: (await seedMessage(w.server, w.t.A1)).threadId,
      mailboxAddress: w.t.A1.address,
      state: 'needs_human',
    }),
  },
  cancel_scheduled_send: {
    route: 'DELETE /api/messages/:messageId/schedule',
    ...answersOf('DELETE /api/messages/:messageId/schedule'),
    args: async (w) => ({ messageId: (await scheduledSend(w)).messageId }),
  },
  create_draft: {
    route: 'POST /api/drafts',
    ...answersOf('POST /api/drafts'),
    args: async (w, c) => ({ ...asDomain(c, w), subject: 'Draft', bodyText: 'Hello' }),
  },
  list_drafts: {
    route: 'GET /api/drafts',
    ...answersOf('GET /api/drafts'),
    args: async (w, c) => ({ ...asDomain(c, w), limit: 10 }),
  },
  get_draft: {
    route: 'GET /api/drafts/:draftId',
    ...answersOf('GET /api/drafts/:draftId'),
    args: async (w) => ({ draftId: await draftOf(w) }),
  },
  update_draft: {
    route: 'PATCH /api/drafts/:draftId',
    ...answersOf('PATCH /api/drafts/:draftId'),
    args: async (w) => ({ draftId: await draftOf(w), subject: 'Changed' }),
  },
  delete_draft: {
    route: 'DELETE /api/drafts/:draftId',
    ...answersOf('DELETE /api/drafts/:draftId'),
    args: async (w) => ({ draftId: await draftOf(w) }),
  },
  send_draft: {
    route: 'POST /api/drafts/:draftId/send',
    ...answersOf('POST /api/drafts/:draftId/send'),
    args: async (w) => ({ draftId: await draftOf(w) }),
  },
  decide_approval: {
    route: 'POST /api/messages/:messageId/approve',
    ...answersOf('POST /api/messages/:messageId/approve'),
    args: async (w) => ({ messageId: (await seedHeldMessage(w.server, w.t.A1)).messageId, decision: 'approve' }),
  },
};

/** A complete draft of A1, afresh per row (as the HTTP fixtures make theirs). */
async function draftOf(w: MatrixWorld): Promise<string> {
  const res = await w.server
    .api(w.t.A1.token)
    .post('/api/drafts', { toAddress: 'someone@remote.example', subject: 'Draft', bodyText: 'Hello' });
  if (res.status !== 201) throw new Error(`draft: ${res.status}`);
  return res.body.data.draftId;
}

/** A scheduled send of A1, afresh per row: cancelling it (or again) answers to whoever may. */
async function scheduledSend(w: MatrixWorld): Promise<{ messageId: string }> {
  const res = await w.server
    .api(w.t.A1.token)
    .post('/api/messages/send', { toAddress: w.t.A2.address, bodyText: 'later', sendAt: Date.now() + 3_600_000 });
  if (res.status !== 202) throw new Error(`schedule: ${res.status}`);
  return res.body.data;
}

const registeredTools = () => allTools({ maxAttachmentBytes: server.runtime.services.config.MAX_ATTACHMENT_BYTES });

/**
 * One SDK client for the whole MCP matrix. It initializes and lists tools with a good token (so
 * the client checks every structuredContent against the tool's outputSchema); each tools/call
 * then carries the row's Authorization (the server is stateless: every POST authenticates anew).
 */
class McpProbe {
  authorization: string | undefined;
  private constructor(readonly client: Client) {}

  static async open(url: string, setupToken: string): Promise<McpProbe> {
    const client = new Client({ name: 'authorization-matrix', version: '1.0.0' });
    let probe: McpProbe | null = null;
    const transport = new StreamableHTTPClientTransport(new URL('/mcp', url), {
      requestInit: { headers: { authorization: bearer(setupToken) } },
      fetch: async (input, init) => {
        const body = typeof init?.body === 'string' ? (JSON.parse(init.body) as { method?: string }) : null;
        if (probe && body?.method === 'tools/call') {
          const headers = new Headers(init?.headers);
          if (probe.authorization === undefined) headers.delete('authorization');
          else headers.set('authorization', probe.authorization);
          return fetch(input, { ...init, headers });
        }
        return fetch(input, init);
      },
    });
    await client.connect(transport);
    probe = new McpProbe(client);
    return probe;
  }

  /** 'success', a tool error's code, or the HTTP status that refused the call before any MCP exchange. */
  async outcome(
    name: string,
    args: Record<string, unknown>,
    authorization: string | undefined,
  ): Promise<{ code: number | 'success'; result?: CallToolResult }> {
    this.authorization = authorization;
    try {
      const result = (await this.client.callTool({ name, arguments: args })) as CallToolResult;
      if (!result.isError) return { code: 'success', result };
      const block = result.content[0];
      return {
        code: (JSON.parse(block && block.type === 'text' ? block.text : '{}') as { code: number }).code,
        result,
      };
    } catch (err) {
      if (err instanceof StreamableHTTPError && typeof err.code === 'number') return { code: err.code };
      throw err;
    }
  }
}

describe('MCP: every registered tool', () => {
  let probe: McpProbe;
  beforeAll(async () => {
    probe = await McpProbe.open(server.url, world.t.X.token);
  });
  afterAll(async () => {
    await probe?.client.close();
  });

  it('has a fixture for every registered and listed tool, each naming a route of the route table', async () => {
    const registered = registeredTools()
      .map((t) => t.name)
      .sort();
    const listed = (await probe.client.listTools()).tools.map((t) => t.name).sort();
    expect(listed).toEqual(registered);
    expect(registered.filter((n) => !toolFixtures[n])).toEqual([]);
    expect(
      Object.values(toolFixtures)
        .filter((f) => !routeByKey.has(f.route))
        .map((f) => f.route),
    ).toEqual([]);
  });

  for (const name of Object.keys(toolFixtures)) {
    it(name, async () => {
      const fixture = toolFixtures[name]!;
      const guard = guardOf(fixture.route);
      const wrong: string[] = [];
      for (const row of matrixRows(guard, fixture)) {
        const who = await row.caller(world);
        const args = await fixture.args(world, buildCaller(row, who, guard));
        const { code } = await probe.outcome(name, args, who.authorization);
        checked.mcp++;
        const expected = want(row.expected, 'success');
        if (code !== expected) wrong.push(`MCP ${name} [${row.name}]: expected ${expected}, got ${code}`);
      }
      mismatches.push(...wrong);
      expect(wrong).toEqual([]);
    });
  }
});

// ---------------------------------------------------------------------------------------------
// Socket.IO: the handshake of /hubs/mailbox-events. It reads the event log with the rules of
// GET /api/events (MailboxRead, both token kinds, the same mailbox rules), so those are its rows.

function handshake(
  url: string,
  authorization: string | undefined,
  mailboxAddress: string | undefined,
): Promise<number | 'success'> {
  const token = authorization?.replace(/^Bearer /, '');
  const socket = connect(url, {
    auth: { ...(token !== undefined ? { token } : {}), ...(mailboxAddress ? { mailboxAddress } : {}) },
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error('no handshake answer within 10 s'));
    }, 10_000);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.close();
      resolve('success');
    });
    socket.once('connect_error', (err: Error & { data?: { code: number } }) => {
      clearTimeout(timer);
      socket.close();
      resolve(err.data?.code ?? -1);
    });
  });
}

describe('Socket.IO: the handshake', () => {
  it('follows the matrix rows of the event log it serves', async () => {
    const guard: Guarded = guardOf('GET /api/events');
    const wrong: string[] = [];
    for (const row of matrixRows(guard, answersOf('GET /api/events'))) {
      const who = await row.caller(world);
      const as = buildCaller(row, who, guard);
      const code = await handshake(
        server.url,
        who.authorization,
        as.kind === 'domain' ? world.t.A1.address : undefined,
      );
      checked.socket++;
      const expected = want(row.expected, 'success');
      if (code !== expected) wrong.push(`Socket.IO handshake [${row.name}]: expected ${expected}, got ${code}`);
    }
    mismatches.push(...wrong);
    expect(wrong).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Cross-tenant object ids, on every route and tool that takes one, in both directions.

interface Objects {
  mailbox: MailboxFixture;
  messageId: string;
  threadId: string;
  attachmentId: string;
  tokenId: string;
  uploadId: string;
  webhookId: string;
  draftId: string;
}
const objects = new Map<string, Objects>();

async function objectsOf(m: MailboxFixture): Promise<Objects> {
  const msg = await seedMessageWithRaw(server, m);
  const child = await mintToken(server, {
    kind: 'mailbox',
    domainId: m.domainId,
    mailboxId: m.mailboxId,
    scopes: ['MailboxRead'],
  });
  const form = new FormData();
  form.set('file', new Blob(['x'], { type: 'text/plain' }), 'x.txt');
  const up = await server.api(m.token).raw('/api/messages/attachments', { method: 'POST', body: form });
  if (up.status !== 201) throw new Error(`upload: ${up.status}`);
  const hooks = await mintToken(server, {
    kind: 'mailbox',
    domainId: m.domainId,
    mailboxId: m.mailboxId,
    scopes: ['WebhookManage'],
  });
  const hook = await server.api(hooks.token).post('/api/mailbox/webhooks', { url: 'http://127.0.0.1:9/hook' });
  if (hook.status !== 201) throw new Error(`webhook: ${hook.status}`);
  const draft = await server.api(m.token).post('/api/drafts', { toAddress: 'someone@remote.example', bodyText: 'x' });
  if (draft.status !== 201) throw new Error(`draft: ${draft.status}`);
  return {
    mailbox: m,
    messageId: msg.messageId,
    threadId: msg.threadId,
    attachmentId: msg.attachmentId,
    tokenId: child.tokenId,
    uploadId: up.body.data.attachmentUploadId,
    webhookId: hook.body.data.webhookId,
    draftId: draft.body.data.draftId,
  };
}

/** Path parameter → the object it names. A route with a parameter not listed here fails the test. */
const PARAM_OBJECT: Record<string, (o: Objects) => string> = {
  messageId: (o) => o.messageId,
  threadId: (o) => o.threadId,
  attachmentId: (o) => o.attachmentId,
  tokenId: (o) => o.tokenId,
  mailboxId: (o) => o.mailbox.mailboxId,
  webhookId: (o) => o.webhookId,
  draftId: (o) => o.draftId,
};
/** Tool arguments that name objects; any other argument ending in Id/Ids fails the test. */
const ID_ARGS = new Set([
  'messageId',
  'threadId',
  'ids',
  'attachmentIds',
  'attachmentId',
  'draftId',
  'parentMessageId',
]);
/** Positions, not objects: an event id is a per-mailbox sequence number read inside the caller's own mailbox. */
const NOT_OBJECT_IDS = new Set(['sinceEventId']);

const paramsOf = (path: string): string[] => [...path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
const bodyShape = (r: RouteSpec): Record<string, unknown> =>
  (r.body && r.body !== 'multipart' ? (r.body as unknown as z.ZodObject).shape : undefined) ?? {};
const foreignCode = (res: { status: number; body: any }): number => {
  // Bulk calls answer 200 with per-id results: a foreign id must be a 404 there and nothing may succeed.
  if (res.status === 200 && res.body?.data?.failedItems) {
    return res.body.data.succeededItems.length === 0 && res.body.data.failedItems.every((f: any) => f.code === 404)
      ? 404
      : 200;
  }
  return res.status;
};

interface Attacker {
  name: string;
  kind: 'mailbox' | 'domain';
  token: () => string;
  own: () => Objects;
  victims: () => Objects[];
}

describe('cross-tenant object ids: 404 everywhere', () => {
  let probe: McpProbe;
  beforeAll(async () => {
    const t = world.t;
    for (const m of [t.A1, t.A2, t.B1]) objects.set(m.mailboxId, await objectsOf(m));
    probe = await McpProbe.open(server.url, t.X.token);
  });
  afterAll(async () => {
    await probe?.client.close();
  });

  const o = (m: () => MailboxFixture) => () => objects.get(m().mailboxId)!;
  const domainToken = (d: () => DomainFixture) => () => d().token;
  // Parameterised over two tenants in both directions; a mailbox token also against its sibling.
  const attackers: Attacker[] = [
    {
      name: 'mailbox token of X (A1)',
      kind: 'mailbox',
      token: () => fullScope.get(world.t.A1.mailboxId)!,
      own: o(() => world.t.A1),
      victims: () => [objects.get(world.t.B1.mailboxId)!, objects.get(world.t.A2.mailboxId)!],
    },
    {
      name: 'domain token of X',
      kind: 'domain',
      token: domainToken(() => world.t.X),
      own: o(() => world.t.A1),
      victims: () => [objects.get(world.t.B1.mailboxId)!],
    },
    {
      name: 'mailbox token of Y (B1)',
      kind: 'mailbox',
      token: () => fullScope.get(world.t.B1.mailboxId)!,
      own: o(() => world.t.B1),
      victims: () => [objects.get(world.t.A1.mailboxId)!, objects.get(world.t.A2.mailboxId)!],
    },
    {
      name: 'domain token of Y',
      kind: 'domain',
      token: domainToken(() => world.t.Y),
      own: o(() => world.t.B1),
      victims: () => [objects.get(world.t.A1.mailboxId)!, objects.get(world.t.A2.mailboxId)!],
    },
  ];

  it('knows every path parameter of the route table and every id argument of the tools', () => {
    expect([...new Set(allRoutes.flatMap((r) => paramsOf(r.path)))].filter((p) => !PARAM_OBJECT[p])).toEqual([]);
    const idArgs = registeredTools().flatMap((t) => Object.keys(t.input.shape).filter((k) => /Ids?$|^ids$/.test(k)));
    expect([...new Set(idArgs)].filter((k) => !ID_ARGS.has(k) && !NOT_OBJECT_IDS.has(k))).toEqual([]);
  });

  for (const a of attackers) {
    it(`HTTP: ${a.name}`, async () => {
      const caller: FixtureCaller = { kind: a.kind, scopes: ALL_SCOPES[a.kind] };
      for (const r of allRoutes.filter((x) => x.auth === 'bearer' && x.tokenKinds.includes(a.kind))) {
        const params = paramsOf(r.path);
        const bulk = 'ids' in bodyShape(r);
        if (params.length === 0 && !bulk) continue;
        const base = await routeFixtures[routeKey(r)]!.build(world, caller);
        for (const victim of a.victims()) {
          const own = a.own();
          // Every parameter foreign, and (with two or more) each one alone among the caller's own ids.
          const variants: Array<Record<string, Objects>> = [Object.fromEntries(params.map((p) => [p, victim]))];
          if (params.length > 1)
            for (const p of params) variants.push(Object.fromEntries(params.map((q) => [q, q === p ? victim : own])));
          for (const v of variants) {
            const path = r.path.replace(/:(\w+)/g, (_, p: string) => PARAM_OBJECT[p]!(v[p]!));
            const req: RouteRequest = { ...base, path };
            if (bulk)
              req.json = {
                ...(base.json as object),
                ids: [victim.messageId],
                ...(a.kind === 'domain' ? { mailboxAddress: own.mailbox.address } : {}),
              };
            const res = await send(server, r.method, req, bearer(a.token()));
            crossTenant.calls++;
            const code = foreignCode(res);
            if (code !== 404)
              crossTenant.non404.push(
                `HTTP ${a.name}: ${r.method} ${path}${bulk ? ' (ids in body)' : ''} → ${res.status}`,
              );
          }
        }
      }
    });

    it(`MCP: ${a.name}`, async () => {
      const own = a.own();
      const own_ = a.kind === 'domain' ? { mailboxAddress: own.mailbox.address } : {};
      for (const tool of registeredTools()) {
        const shape = Object.keys(tool.input.shape);
        for (const victim of a.victims()) {
          const calls: Array<Record<string, unknown>> = [];
          if (shape.includes('messageId') && tool.name === 'reply_message')
            calls.push({ messageId: victim.messageId, bodyText: 'x', ...own_ });
          else if (tool.name === 'decide_approval') calls.push({ messageId: victim.messageId, decision: 'reject' });
          else if (tool.name === 'get_attachment')
            calls.push({ messageId: victim.messageId, attachmentId: victim.attachmentId });
          else if (tool.name === 'forward_message')
            calls.push({ messageId: victim.messageId, toAddress: 'someone@remote.example', ...own_ });
          else if (shape.includes('messageId')) calls.push({ messageId: victim.messageId });
          if (shape.includes('draftId'))
            calls.push({ draftId: victim.draftId, ...(tool.name === 'update_draft' ? { subject: 'x' } : {}) });
          // A reply draft naming another tenant's message, new or on the caller's own draft.
          if (tool.name === 'create_draft') calls.push({ parentMessageId: victim.messageId, ...own_ });
          if (tool.name === 'update_draft') calls.push({ draftId: own.draftId, parentMessageId: victim.messageId });
          if (tool.name === 'set_thread_state') calls.push({ threadId: victim.threadId, state: 'closed' });
          else if (shape.includes('threadId')) calls.push({ threadId: victim.threadId });
          if (shape.includes('ids'))
            calls.push({
              ids: [victim.messageId],
              ...own_,
              ...(tool.name === 'set_read_state' ? { isRead: true } : {}),
            });
          for (const args of calls) {
            const { code, result } = await probe.outcome(tool.name, args, bearer(a.token()));
            crossTenant.calls++;
            const data = result?.structuredContent as
              { succeededItems?: unknown[]; failedItems?: Array<{ code: number }> } | undefined;
            const effective =
              code === 'success' && data?.failedItems
                ? data.succeededItems!.length === 0 && data.failedItems.every((f) => f.code === 404)
                  ? 404
                  : 200
                : code;
            if (effective !== 404)
              crossTenant.non404.push(`MCP ${a.name}: ${tool.name} ${JSON.stringify(args)} → ${code}`);
          }
        }
      }
    });

    it(`upload ids of another tenant answer like unknown ones: ${a.name}`, async () => {
      const own = a.own();
      const acting = a.kind === 'domain' ? { mailboxAddress: own.mailbox.address } : {};
      const unknown = newId(ID_PREFIX.attachment);
      for (const victim of a.victims()) {
        // HTTP: every route whose JSON body takes attachmentIds.
        for (const r of allRoutes.filter((x) => x.tokenKinds.includes(a.kind) && 'attachmentIds' in bodyShape(x))) {
          const path = r.path.replace(/:messageId/, own.messageId).replace(/:draftId/, own.draftId);
          const body = { ...acting, toAddress: 'someone@remote.example', subject: 's', bodyText: 'b' };
          const [foreign, none] = [
            await send(
              server,
              r.method,
              { path, json: { ...body, attachmentIds: [victim.uploadId] } },
              bearer(a.token()),
            ),
            await send(server, r.method, { path, json: { ...body, attachmentIds: [unknown] } }, bearer(a.token())),
          ];
          // The message names the ids the caller sent, nothing else: compare it with the id masked.
          const masked = (m: string | null, id: string) => (m ?? '').replaceAll(id, '<id>');
          if (
            foreign.status !== none.status ||
            masked(foreign.body.errMsg, victim.uploadId) !== masked(none.body.errMsg, unknown) ||
            foreign.status < 400
          )
            uploadIdMismatches.push(`HTTP ${a.name} ${routeKey(r)}: foreign ${foreign.status}, unknown ${none.status}`);
        }
        // MCP: every tool taking attachmentIds.
        for (const tool of registeredTools().filter((t) => 'attachmentIds' in t.input.shape)) {
          const args = {
            ...acting,
            toAddress: 'someone@remote.example',
            subject: 's',
            bodyText: 'b',
            ...(tool.name === 'reply_message' ? { messageId: own.messageId } : {}),
            ...(tool.name === 'update_draft' ? { draftId: own.draftId } : {}),
          };
          const foreign = await probe.outcome(
            tool.name,
            { ...args, attachmentIds: [victim.uploadId] },
            bearer(a.token()),
          );
          const none = await probe.outcome(tool.name, { ...args, attachmentIds: [unknown] }, bearer(a.token()));
          if (foreign.code !== none.code || foreign.code === 'success')
            uploadIdMismatches.push(`MCP ${a.name} ${tool.name}: foreign ${foreign.code}, unknown ${none.code}`);
        }
      }
    });
  }
});

describe('figures', () => {
  it('0 mismatches over every route, tool and the handshake; 0 non-404 answers to foreign ids', () => {
    const cases = checked.http + checked.mcp + checked.socket;
    zeroFigure(
      SUITE,
      `matrix mismatches (HTTP ${checked.http} + MCP ${checked.mcp} + Socket.IO ${checked.socket} cases)`,
      mismatches.length,
    );
    recordFigure({
      suite: SUITE,
      name: `matrix cases checked (${allRoutes.length} routes, ${Object.keys(toolFixtures).length} tools, handshake)`,
      value: cases,
      target: '> 0 on every channel',
      pass: checked.http > 0 && checked.mcp > 0 && checked.socket > 0,
    });
    zeroFigure(SUITE, `cross-tenant ids: non-404 answers (of ${crossTenant.calls} calls)`, crossTenant.non404.length);
    zeroFigure(SUITE, 'cross-tenant upload ids answered unlike unknown ones', uploadIdMismatches.length);
    expect(mismatches).toEqual([]);
    expect(crossTenant.non404).toEqual([]);
    expect(uploadIdMismatches).toEqual([]);
    expect(checked.http).toBeGreaterThan(0);
    expect(checked.mcp).toBeGreaterThan(0);
    expect(checked.socket).toBeGreaterThan(0);
    expect(crossTenant.calls).toBeGreaterThan(0);
  });
});
