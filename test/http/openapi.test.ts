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
afterAll(async () => {
  await server?.close();
});

const openApiPath = (p: string) => p.replace(/:([A-Za-z]+)/g, '{$1}');

describe('GET /api/openapi.json', () => {
  it('is OpenAPI 3.1 with a bearer security scheme', () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(doc.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    expect(doc.components.securitySchemes.bearer).toEqual({ type: 'http', scheme: 'bearer' });
  });

  it('contains every route of allRoutes with its method', () => {
    const documented = Object.entries(doc.paths).flatMap(([p, ops]) =>
      Object.keys(ops as object).map((m) => `${m.toUpperCase()} ${p}`),
    );
    expect(documented).toEqual(expect.arrayContaining(allRoutes.map((r) => `${r.method} ${openApiPath(r.path)}`)));
  });

  it.each(allRoutes.map((r) => [`${r.method} ${r.path}`, r] as const))(
    '%s: request body, parameters, security and success status',
    (_k, r) => {
      const op = doc.paths[openApiPath(r.path)][r.method.toLowerCase()];
      if (r.body === 'multipart') {
        expect(op.requestBody.content['multipart/form-data']).toBeDefined();
      } else if (r.body) {
        const expected = z.toJSONSchema(r.body, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' });
        const named = op.requestBody.content['application/json'].schema.$ref.replace('#/components/schemas/', '');
        expect(doc.components.schemas[named]).toEqual(JSON.parse(JSON.stringify(expected)));
      } else {
        expect(op.requestBody).toBeUndefined();
      }
      for (const name of [...r.path.matchAll(/:([A-Za-z]+)/g)].map((m) => m[1])) {
        expect(op.parameters).toContainEqual(expect.objectContaining({ name, in: 'path', required: true }));
      }
      expect(op.security).toEqual(r.auth === 'bearer' ? [{ bearer: [] }] : []);
      if (r.scope) expect(op['x-required-scope']).toBe(r.scope);
      expect(op.responses[String(r.status)]).toBeDefined();
      // Named `data` schema, a tag, and the error answers documented with the envelope.
      const data = op.responses[String(r.status)].content['application/json'].schema.properties.data.$ref;
      expect(doc.components.schemas[data.replace('#/components/schemas/', '')]).toBeDefined();
      expect(doc.tags.map((t: { name: string }) => t.name)).toContain(op.tags[0]);
      if (r.auth === 'bearer') expect(op.responses['401']).toEqual({ $ref: '#/components/responses/Unauthorized' });
      expect(op.responses['400']).toEqual({ $ref: '#/components/responses/BadRequest' });
      const idempotency = op.parameters.some(
        (p: { $ref?: string }) => p.$ref === '#/components/parameters/IdempotencyKey',
      );
      expect(idempotency).toBe(r.idempotent === true);
    },
  );

  it('names the server, and answers every error with the envelope whose data is null', () => {
    expect(doc.servers).toEqual([{ url: '/', description: 'This server' }]);
    for (const [name, response] of Object.entries(doc.components.responses) as [string, any][]) {
      // 304 has no body at all (docs/api.md, "Change marks and ETags").
      if (name === 'NotModified') expect(response.content).toBeUndefined();
      else
        expect(response.content['application/json'].schema, name).toEqual({
          $ref: '#/components/schemas/ErrorEnvelope',
        });
    }
    // Reads with a change mark document If-None-Match, the ETag header and the 304.
    for (const path of ['/api/messages', '/api/messages/{messageId}', '/api/threads/{threadId}']) {
      const op = doc.paths[path].get;
      expect(op.parameters, path).toContainEqual({ $ref: '#/components/parameters/IfNoneMatch' });
      expect(op.responses['304'], path).toEqual({ $ref: '#/components/responses/NotModified' });
      expect(op.responses['200'].headers.ETag, path).toEqual({ $ref: '#/components/headers/ETag' });
    }
    expect(doc.components.schemas.ErrorEnvelope.properties.data).toEqual({ type: 'null' });
    expect(doc.components.parameters.IdempotencyKey).toMatchObject({ name: 'Idempotency-Key', in: 'header' });
  });

  it('is served as a rendered reference at /api/docs from local files only', async () => {
    const page = await fetch(`${server.url}/api/docs`);
    // The console may be unbuilt in a bare checkout (503 says how to build it); built, it is the page.
    expect([200, 503]).toContain(page.status);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    if (page.status === 200) expect(await page.text()).not.toMatch(/src="https?:/);
  });
});
