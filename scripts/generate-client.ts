// `make client`: writes the OpenAPI document of the route table to clients/typescript/openapi.json;
// the Makefile then runs openapi-typescript on it. test/unit/typed-client.test.ts fails when the
// committed document is older than the routes.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildOpenApi } from '../src/channels/http/openapi.js';
import { allRoutes } from '../src/channels/http/routes/index.js';

const out = path.resolve(import.meta.dirname, '../clients/typescript/openapi.json');
writeFileSync(out, JSON.stringify(buildOpenApi(allRoutes), null, 2) + '\n');
console.log(`wrote ${path.relative(process.cwd(), out)}`);
