import { z } from 'zod';
import type { RouteSpec } from './route.js';
import { ERROR_RESPONSES, TAGS, envelopeOf, errorResponsesOf, pascal } from './openapi-parts.js';

const jsonSchema = (schema: z.ZodType, io: 'input' | 'output') =>
  z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Record<string, unknown>;

const ref = (kind: 'schemas' | 'responses' | 'parameters' | 'headers', name: string) => ({
  $ref: `#/components/${kind}/${name}`,
});

export interface OpenApiOptions {
  /** PUBLIC_BASE_URL: the `servers` entry; without it the document points at the server it came from. */
  publicBaseUrl?: string | undefined;
}

/**
 * OpenAPI 3.1 built from the route table and the very zod schemas that validate input, so the
 * document cannot drift from what the server accepts. Request and `data` schemas are named
 * components (`<Operation>Body`, `<Operation>Data`); error answers are shared responses with the
 * envelope; operations are tagged for the reference page at /api/docs.
 */
export function buildOpenApi(routes: readonly RouteSpec[], options: OpenApiOptions = {}): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const schemas: Record<string, unknown> = {
    EnvelopMessage: envelopeOf({ description: 'The result; its schema is given per operation.' }),
    ErrorEnvelope: envelopeOf({ type: 'null' }),
  };
  for (const r of routes) {
    const path = r.path.replace(/:([A-Za-z]+)/g, '{$1}');
    const operationId = `${r.method.toLowerCase()}${path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`;
    const stem = pascal(operationId);
    const parameters: unknown[] = [];
    for (const [where, schema] of [
      ['path', r.params],
      ['query', r.query],
    ] as const) {
      if (!schema) continue;
      const s = jsonSchema(schema, 'input') as { properties?: Record<string, unknown>; required?: string[] };
      for (const [name, prop] of Object.entries(s.properties ?? {})) {
        parameters.push({
          name,
          in: where,
          required: where === 'path' || (s.required ?? []).includes(name),
          schema: prop,
        });
      }
    }
    if (r.idempotent) parameters.push(ref('parameters', 'IdempotencyKey'));
    if (r.changeMark) parameters.push(ref('parameters', 'IfNoneMatch'));
    schemas[`${stem}Data`] = jsonSchema(r.response, 'output');
    const responses: Record<string, unknown> = {
      [String(r.status)]: {
        description: 'Success',
        content: { 'application/json': { schema: envelopeOf(ref('schemas', `${stem}Data`)) } },
        ...(r.changeMark ? { headers: { ETag: ref('headers', 'ETag') } } : {}),
      },
      ...(r.changeMark ? { '304': ref('responses', 'NotModified') } : {}),
    };
    for (const name of errorResponsesOf(r)) responses[String(ERROR_RESPONSES[name]!.status)] = ref('responses', name);
    responses.default = ref('responses', 'Error');
    const op: Record<string, unknown> = {
      operationId,
      summary: r.summary,
      tags: [TAGS.find((t) => t.test(r))!.name],
      ...(r.auth === 'bearer' ? { security: [{ bearer: [] }] } : { security: [] }),
      ...(r.scope ? { 'x-required-scope': r.scope } : {}),
      ...(r.domainScope ? { 'x-required-scope-domain-token': r.domainScope } : {}),
      'x-token-kinds': r.tokenKinds,
      parameters,
      responses,
    };
    if (r.body === 'multipart') {
      op.requestBody = {
        required: true,
        content: {
          'multipart/form-data': {
            schema: {
              type: 'object',
              required: ['file'],
              properties: { mailboxAddress: { type: 'string' }, file: { type: 'string', format: 'binary' } },
            },
          },
        },
      };
    } else if (r.body) {
      schemas[`${stem}Body`] = jsonSchema(r.body, 'input');
      op.requestBody = { required: true, content: { 'application/json': { schema: ref('schemas', `${stem}Body`) } } };
    }
    (paths[path] ??= {})[r.method.toLowerCase()] = op;
  }
  const errorContent = { 'application/json': { schema: ref('schemas', 'ErrorEnvelope') } };
  const responses: Record<string, unknown> = {
    Error: { description: 'Any other error (5xx: "Internal error.").', content: errorContent },
    NotModified: {
      description: 'Nothing this read returns changed since the ETag named in If-None-Match; no body.',
      headers: { ETag: ref('headers', 'ETag') },
    },
  };
  for (const [name, e] of Object.entries(ERROR_RESPONSES))
    responses[name] = {
      description: e.description,
      content: errorContent,
      ...(e.status === 429 || e.status === 503
        ? { headers: { 'Retry-After': { description: 'Seconds to wait.', schema: { type: 'integer' } } } }
        : {}),
      ...(e.status === 401
        ? { headers: { 'WWW-Authenticate': { description: 'Bearer challenge.', schema: { type: 'string' } } } }
        : {}),
    };
  return {
    openapi: '3.1.0',
    info: {
      title: 'mailbox-service',
      version: '0.1.0',
      description:
        'Every response is an EnvelopMessage { data, code, errorCode, msg, errMsg, tid }; errorCode is the stable ' +
        'error code (null on success). Timestamps (…Ts) are Unix milliseconds. ' +
        'Authenticate with `Authorization: Bearer <token>` (a mailbox token mbxm_… or a domain token mbxd_…).',
    },
    servers: [{ url: options.publicBaseUrl?.replace(/\/$/, '') ?? '/', description: 'This server' }],
    tags: TAGS.map(({ name, description }) => ({ name, description })),
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      headers: {
        ETag: {
          description:
            'Weak ETag from the mailbox change mark (docs/api.md, "Change marks and ETags"); send it back in ' +
            'If-None-Match to get 304 while nothing changed.',
          schema: { type: 'string' },
        },
      },
      parameters: {
        IfNoneMatch: {
          name: 'If-None-Match',
          in: 'header',
          required: false,
          description: 'The ETag of an earlier answer to the same request: 304 without a body while it is current.',
          schema: { type: 'string' },
        },
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description:
            'Opaque client key (1-200 visible ASCII characters), kept per mailbox: a retry with the same key and ' +
            'request answers the first 202 instead of sending again; the same key with another request is 409.',
          schema: { type: 'string', minLength: 1, maxLength: 200, pattern: '^[\\x21-\\x7e]+$' },
        },
      },
      schemas,
      responses,
    },
    paths,
  };
}
