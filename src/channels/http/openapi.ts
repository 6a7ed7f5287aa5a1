import { z } from 'zod';
import type { RouteSpec } from './route.js';

const envelopeOf = (data: Record<string, unknown>) => ({
  type: 'object',
  required: ['data', 'code', 'msg', 'errMsg', 'tid'],
  properties: {
    data,
    code: { type: 'integer' },
    msg: { type: ['string', 'null'] },
    errMsg: { type: ['string', 'null'] },
    tid: { type: 'string', description: 'W3C trace id of the request' },
  },
});

const jsonSchema = (schema: z.ZodType, io: 'input' | 'output') =>
  z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Record<string, unknown>;

/**
 * OpenAPI 3.1 built from the route table and the very zod schemas that validate input, so the
 * document cannot drift from what the server accepts.
 */
export function buildOpenApi(routes: readonly RouteSpec[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const path = r.path.replace(/:([A-Za-z]+)/g, '{$1}');
    const parameters: unknown[] = [];
    for (const [where, schema] of [['path', r.params], ['query', r.query]] as const) {
      if (!schema) continue;
      const s = jsonSchema(schema, 'input') as { properties?: Record<string, unknown>; required?: string[] };
      for (const [name, prop] of Object.entries(s.properties ?? {})) {
        parameters.push({ name, in: where, required: where === 'path' || (s.required ?? []).includes(name), schema: prop });
      }
    }
    const op: Record<string, unknown> = {
      summary: r.summary,
      operationId: `${r.method.toLowerCase()}${path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
      ...(r.auth === 'bearer' ? { security: [{ bearer: [] }] } : { security: [] }),
      ...(r.scope ? { 'x-required-scope': r.scope } : {}),
      'x-token-kinds': r.tokenKinds,
      parameters,
      responses: {
        [String(r.status)]: { description: 'Success', content: { 'application/json': { schema: envelopeOf(jsonSchema(r.response, 'output')) } } },
        default: { description: 'Error (EnvelopMessage with data null)', content: { 'application/json': { schema: envelopeOf({ type: 'null' }) } } },
      },
    };
    if (r.body === 'multipart') {
      op.requestBody = { required: true, content: { 'multipart/form-data': { schema: { type: 'object', required: ['file'], properties: { mailboxAddress: { type: 'string' }, file: { type: 'string', format: 'binary' } } } } } };
    } else if (r.body) {
      op.requestBody = { required: true, content: { 'application/json': { schema: jsonSchema(r.body, 'input') } } };
    }
    (paths[path] ??= {})[r.method.toLowerCase()] = op;
  }
  return {
    openapi: '3.1.0',
    info: { title: 'mailbox-service', version: '0.1.0', description: 'Every response is an EnvelopMessage { data, code, msg, errMsg, tid }. Timestamps (…Ts) are Unix milliseconds.' },
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    paths,
  };
}
