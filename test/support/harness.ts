import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../src/config/config.js';
import { startRuntime, type Role, type Runtime } from '../../src/runtime/runtime.js';
import { silentLogger, type Logger } from '../../src/core/base/logger.js';
import { registerSmtp } from './intake-queue.js';
import { upsertDomain } from '../../src/core/state/domains/domain.store.js';
import { DOMAIN_TOKEN_SCOPES, type Scope } from '../../src/core/access/scopes.js';
import type { Clock } from '../../src/core/base/time.js';
import { migratedPgliteDump } from './pglite-dump.js';
import { databaseUrl, migratedTemplate } from './postgres-template.js';

/** Which engine this vitest project runs against (vitest.config.ts sets it per project). */
export const ENGINE = (process.env.MAILBOX_TEST_ENGINE ?? 'postgres') as 'postgres' | 'pglite';
export const PG_ADMIN_URL = process.env.MAILBOX_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS_TEST_URL = process.env.MAILBOX_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface TestServer {
  url: string;
  runtime: Runtime;
  dataDir: string;
  databaseUrl: string | undefined;
  /** A domain with a domain token holding every scope (or the scopes given). */
  createDomain(
    name?: string,
    opts?: { scopes?: readonly Scope[]; expiresAt?: Date | null; sendRateLimitPerMinute?: number },
  ): Promise<{ domainId: string; name: string; token: string; tokenId: string }>;
  /** A mailbox created through POST /api/mailboxes, with its bootstrap token. */
  createMailbox(
    domainToken: string,
    address: string,
    displayName?: string,
  ): Promise<{ mailboxId: string; address: string; token: string; tokenId: string }>;
  api(token?: string): ApiClient;
  close(): Promise<void>;
}

export interface ApiResponse<T = any> {
  status: number;
  body: { data: T; code: number; errorCode: string | null; msg: string | null; errMsg: string | null; tid: string };
  headers: Headers;
}

export interface ApiClient {
  get<T = any>(path: string, headers?: Record<string, string>): Promise<ApiResponse<T>>;
  post<T = any>(path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse<T>>;
  put<T = any>(path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse<T>>;
  patch<T = any>(path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse<T>>;
  delete<T = any>(path: string, headers?: Record<string, string>): Promise<ApiResponse<T>>;
  raw(path: string, init: RequestInit): Promise<ApiResponse>;
}

/**
 * Creates a PostgreSQL database for one test file and returns its URL: a copy of the migrated
 * template (test/support/postgres-template.ts), or with `empty`, one without any table (for a test
 * of the migrations themselves).
 */
export async function createScratchDatabase(
  options: { empty?: boolean } = {},
): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `mbx_test_${randomBytes(6).toString('hex')}`;
  const template = options.empty ? undefined : await migratedTemplate(PG_ADMIN_URL);
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`create database ${name}${template ? ` template ${template}` : ''}`);
  await admin.end();
  const url = databaseUrl(PG_ADMIN_URL, name);
  return {
    url,
    async drop() {
      const c = new pg.Client({ connectionString: PG_ADMIN_URL });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

export function apiClient(base: string, token?: string): ApiClient {
  const call = async (
    method: string,
    p: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ApiResponse> => {
    const h: Record<string, string> = { ...headers };
    if (token !== undefined) h.authorization = `Bearer ${token}`;
    let payload: string | undefined;
    if (body !== undefined) {
      payload = typeof body === 'string' ? body : JSON.stringify(body);
      h['content-type'] ??= 'application/json';
    }
    const res = await fetch(base + p, { method, headers: h, body: payload });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
  };
  return {
    get: (p, h) => call('GET', p, undefined, h),
    post: (p, b, h) => call('POST', p, b, h),
    put: (p, b, h) => call('PUT', p, b, h),
    patch: (p, b, h) => call('PATCH', p, b, h),
    delete: (p, h) => call('DELETE', p, undefined, h),
    raw: async (p, init) => {
      const h = new Headers(init.headers);
      if (token !== undefined && !h.has('authorization')) h.set('authorization', `Bearer ${token}`);
      const res = await fetch(base + p, { ...init, headers: h });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
    },
  };
}

export interface StartTestOptions {
  env?: Record<string, string>;
  roles?: Role[];
  clock?: Clock;
  /** Where the service logs (default: nowhere); a test that inspects logs passes a capturing one. */
  log?: Logger;
  /** Force an engine regardless of the project (e.g. a test that is about PGlite itself). */
  engine?: 'postgres' | 'pglite';
}

/**
 * Starts the real service on a free port against a fresh database: a scratch PostgreSQL
 * database, or an in-memory PGlite. Nothing of our storage is mocked.
 */
export async function startTestServer(options: StartTestOptions = {}): Promise<TestServer> {
  const engine = options.engine ?? ENGINE;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'mbx-test-'));
  const scratch = engine === 'postgres' ? await createScratchDatabase() : undefined;
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    MAILBOX_DATA_DIR: dataDir,
    MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
    DATABASE_POOL_MAX: '4',
    ...(scratch ? { DATABASE_URL: scratch.url } : {}),
    // Many tests send bad tokens from 127.0.0.1 on purpose; the credential-failure budget of one
    // address is tested where it is the subject (test/reliability/brute-force.test.ts, SMTP limits).
    AUTH_FAILURES_PER_15M: '1000000',
    // A test's server closes with whatever its tests left open (a long-poll, an SMTP session): the
    // drains a deployment gives them (10 s, 5 s) only make the file wait. Where draining is the
    // subject, the test sets its own (test/reliability/shutdown.test.ts).
    HTTP_DRAIN_TIMEOUT: '500ms',
    SMTP_CLOSE_TIMEOUT: '500ms',
    ...options.env,
  });
  const runtime = await startRuntime(config, {
    roles: options.roles ?? ['api'],
    log: options.log ?? silentLogger,
    inMemoryDatabase: engine === 'pglite' && { dump: await migratedPgliteDump() },
    ...(options.clock ? { clock: options.clock } : {}),
  });
  const unregisterSmtp = registerSmtp(runtime);
  const url = `http://127.0.0.1:${runtime.httpPort}`;
  const services = runtime.services;
  let domainCounter = 0;

  const server: TestServer = {
    url,
    runtime,
    dataDir,
    databaseUrl: scratch?.url,
    async createDomain(name, opts = {}) {
      const domainName = name ?? `d${++domainCounter}-${randomBytes(3).toString('hex')}.test`;
      return services.db.tx(async (trx) => {
        const domainId = await upsertDomain(trx, {
          name: domainName,
          sendRateLimitPerMinute: opts.sendRateLimitPerMinute ?? null,
        });
        const token = await services.tokenMinter.mint(trx, {
          kind: 'domain',
          domainId,
          mailboxId: null,
          name: 'test-domain-token',
          scopes: opts.scopes ?? DOMAIN_TOKEN_SCOPES,
          expiresAt: opts.expiresAt === undefined ? new Date(Date.now() + 365 * 86_400_000) : opts.expiresAt,
          createdSource: 'resource',
          parentTokenId: null,
        });
        return { domainId, name: domainName, token: token.accessToken, tokenId: token.tokenId };
      });
    },
    async createMailbox(domainToken, address, displayName = '') {
      const res = await apiClient(url, domainToken).post('/api/mailboxes', { address, displayName });
      if (res.status !== 201) throw new Error(`createMailbox ${address}: ${res.status} ${JSON.stringify(res.body)}`);
      const d = res.body.data;
      return {
        mailboxId: d.mailbox.mailboxId,
        address: d.mailbox.address,
        token: d.initialAccessToken,
        tokenId: d.initialAccessTokenId,
      };
    },
    api: (token) => apiClient(url, token),
    async close() {
      unregisterSmtp();
      await runtime.close();
      await scratch?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return server;
}
