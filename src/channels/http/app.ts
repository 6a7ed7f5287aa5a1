import Koa from 'koa';
import Router from '@koa/router';
import { koaBody, HttpMethodEnum } from 'koa-body';
import type { z } from 'zod';
import { AppError } from '../../core/base/errors.js';
import { parseInput } from '../../core/base/validation.js';
import type { Services } from '../../core/services.js';
import type { Principal } from '../../core/access/principal.js';
import { envelope, envelopeMiddleware, sendJson } from './envelope.js';
import type { RouteSpec } from './route.js';
import { allRoutes } from './routes/index.js';
import { buildOpenApi } from './openapi.js';
import { ChangeMarked, RawResponse, targetMailboxAddress } from './route.js';
import { assertIdentityCoding } from './body-coding.js';
import { clientAddressResolver } from '../shared/client-address.js';
import { bearerToken } from '../shared/bearer-token.js';
import { accessLog } from './access-log.js';
import { answerFromChangeMark } from './etag.js';

export interface HttpAppOptions {
  /** Mount the /api routes (api role); false serves only health, readiness and metrics. */
  apiRoutes?: boolean;
  /** Extra routers (MCP …), mounted after the envelope middleware. */
  extraRouters?: Router[];
  /** Middlewares run inside the envelope for every request (metrics …). */
  middlewares?: Koa.Middleware[];
  /** Renders GET /metrics (Prometheus text format). */
  metrics?: { render(): Promise<string> };
}

function validate<T>(schema: z.ZodType<T> | undefined, value: unknown, where: string): T {
  return schema ? parseInput(schema, value, where) : (value as T);
}

/**
 * The HTTP channel: translates requests into core calls and results or errors into the
 * envelope. It decides nothing about scopes, visibility or limits; the core does.
 */
export function createHttpApp(services: Services, options: HttpAppOptions = {}): Koa {
  // Koa's own X-Forwarded-* handling stays off: the client address is resolved once, by the
  // shared rule (channels/shared/client-address.ts), and set as ctx.ip for routes and MCP.
  const app = new Koa({ proxy: false });
  const clientAddressOf = clientAddressResolver(services.config.TRUST_PROXY);
  app.use(accessLog(services.log));
  app.use(envelopeMiddleware(services.log));
  app.use(async (ctx, next) => {
    ctx.request.ip = clientAddressOf(ctx.req.socket.remoteAddress, ctx.req.headers['x-forwarded-for']) ?? '';
    await next();
  });
  for (const middleware of options.middlewares ?? []) app.use(middleware);

  const router = new Router();
  router.get('/healthz', (ctx) => {
    ctx.body = envelope(200, { status: 'ok' });
  });
  router.get('/readyz', async (ctx) => {
    const checks: Record<string, string> = {};
    try {
      await services.db.ping();
      checks.database = 'ok';
    } catch {
      checks.database = 'unreachable';
    }
    if (services.redis)
      checks.redis = (await services.redis.ping().catch(() => 'unreachable')) === 'PONG' ? 'ok' : 'unreachable';
    const ready = Object.values(checks).every((v) => v === 'ok');
    ctx.status = ready ? 200 : 503;
    ctx.body = envelope(
      ctx.status,
      { ready, checks },
      ready ? null : { code: 'UNAVAILABLE', message: 'A dependency is unreachable.' },
    );
  });
  if (options.metrics) {
    const metrics = options.metrics;
    router.get('/metrics', async (ctx) => {
      // Prometheus text exposition format, not the envelope: scrapers expect it bare.
      ctx.type = 'text/plain; version=0.0.4; charset=utf-8';
      ctx.body = await metrics.render();
    });
  }
  const openapi = buildOpenApi(allRoutes, { publicBaseUrl: services.config.PUBLIC_BASE_URL });
  router.get('/api/openapi.json', (ctx) => {
    ctx.body = openapi;
  });

  const json = koaBody({
    json: true,
    multipart: false,
    urlencoded: false,
    text: false,
    jsonLimit: services.config.MAX_JSON_BYTES,
    jsonStrict: true,
    parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH, HttpMethodEnum.DELETE],
  });
  if (options.apiRoutes !== false) for (const spec of allRoutes) mount(router, spec, services, json);

  for (const extra of options.extraRouters ?? []) app.use(extra.routes()).use(extra.allowedMethods({ throw: true }));
  app.use(router.routes());
  app.use(router.allowedMethods({ throw: true }));
  return app;
}

function mount(router: Router, spec: RouteSpec, services: Services, json: Koa.Middleware): void {
  const method = spec.method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
  // Order matters: 401 before any body is read, then 415/413/400 for the body, then the core.
  const middlewares: Koa.Middleware[] = [
    async (ctx, next) => {
      if (spec.auth === 'bearer') {
        ctx.state.principal = await services.tokenAuth.authenticate(
          bearerToken(ctx.get('authorization') || undefined),
          ctx.ip || null,
        );
      }
      await next();
    },
  ];
  if (spec.body && spec.body !== 'multipart') {
    middlewares.push(async (ctx, next) => {
      const hasBody =
        ctx.request.length !== undefined
          ? ctx.request.length > 0
          : ctx.request.headers['transfer-encoding'] !== undefined;
      if (hasBody && !ctx.request.is('application/json'))
        throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Send the body as application/json.');
      if (hasBody) assertIdentityCoding(ctx);
      await next();
    }, json);
  }
  router[method](spec.path, ...middlewares, async (ctx) => {
    const params = validate(spec.params, ctx.params, 'path');
    const query = validate(spec.query, ctx.query, 'query');
    const body =
      spec.body === 'multipart' ? undefined : validate(spec.body, (ctx.request as { body?: unknown }).body, 'body');
    const principal = ctx.state.principal as Principal;
    if (spec.target)
      await services.messages.assertTargetMailbox(
        principal,
        (params as { messageId: string }).messageId,
        targetMailboxAddress(query, body),
      );
    if (spec.changeMark === 'target') {
      const mark = await services.changeMarks.of(principal, spec.changeMark, query?.mailboxAddress, ctx.url);
      if (answerFromChangeMark(ctx, mark)) return;
    }
    let data = await spec.handler({ params, query, body, principal, services, remoteIp: ctx.ip || null, ctx });
    if (data instanceof ChangeMarked) {
      // 304 when the caller holds the mark (the core then read no page: data is null).
      if (answerFromChangeMark(ctx, data.mark)) return;
      data = data.data;
    }
    if (spec.noStore) ctx.set('Cache-Control', 'no-store');
    ctx.status = spec.status;
    // Downloads answer the bytes themselves (raw message, attachment); errors still use the envelope.
    if (data instanceof RawResponse) {
      ctx.type = data.contentType;
      if (data.contentDisposition) ctx.set('Content-Disposition', data.contentDisposition);
      if (data.sizeBytes !== undefined) ctx.length = data.sizeBytes;
      ctx.set('X-Content-Type-Options', 'nosniff');
      ctx.body = data.body;
      return;
    }
    sendJson(ctx, envelope(spec.status, data ?? null));
  });
}
