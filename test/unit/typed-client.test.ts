import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildOpenApi } from '../../src/channels/http/openapi.js';
import { allRoutes } from '../../src/channels/http/routes/index.js';

// clients/typescript is generated from the OpenAPI document; `make lint` type-checks its example
// against the generated types. This fails when a route changed and `make client` was not run.
describe('the typed TypeScript client', () => {
  it('was generated from the current route table', () => {
    const committed = JSON.parse(
      readFileSync(path.resolve(import.meta.dirname, '../../clients/typescript/openapi.json'), 'utf8'),
    ) as unknown;
    expect(committed).toEqual(JSON.parse(JSON.stringify(buildOpenApi(allRoutes))));
  });
});
