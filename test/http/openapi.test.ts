import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { allRoutes } from '../../src/channels/http/routes/index.js';
import { startTestServer, type TestServer } from '../support/harness.js';

// The OpenAPI document is generated from the route table and the validating zod schemas; this
// checks it covers every route, with the same request schemas the server enforces.

let server: TestServer;
let doc: any;
beforeAll(async () => {
  server = await startTestServer();
  doc = (await server.api().get('/api/openapi.json')).body;
});
afterAll(async () => { await server?.close(); });

const openApiPath = (p: string) => p.replace(/:([A-Za-z]+)/g, '{$1}');

describe('GET /api/openapi.json', () => {
  it('is OpenAPI 3.1 with a bearer security scheme', () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(doc.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    expect(doc.components.securitySchemes.bearer).toEqual({ type: 'http', scheme: 'bearer' });
  });

  it('contains every route of allRoutes with its method', () => {
    const documented = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops as object).map((m) => `${m.toUpperCase()} ${p}`));
    expect(documented).toEqual(expect.arrayContaining(allRoutes.map((r) => `${r.method} ${openApiPath(r.path)}`)));
  });

  it.each(allRoutes.map((r) => [`${r.method} ${r.path}`, r] as const))('%s: request body, parameters, security and success status', (_k, r) => {
    const op = doc.paths[openApiPath(r.path)][r.method.toLowerCase()];
    if (r.body === 'multipart') {
      expect(op.requestBody.content['multipart/form-data']).toBeDefined();
    } else if (r.body) {
      const expected = z.toJSONSchema(r.body, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' });
      expect(op.requestBody.content['application/json'].schema).toEqual(JSON.parse(JSON.stringify(expected)));
    } else {
      expect(op.requestBody).toBeUndefined();
    }
    for (const name of [...r.path.matchAll(/:([A-Za-z]+)/g)].map((m) => m[1])) {
      expect(op.parameters).toContainEqual(expect.objectContaining({ name, in: 'path', required: true }));
    }
    expect(op.security).toEqual(r.auth === 'bearer' ? [{ bearer: [] }] : []);
    if (r.scope) expect(op['x-required-scope']).toBe(r.scope);
    expect(op.responses[String(r.status)]).toBeDefined();
  });
});
