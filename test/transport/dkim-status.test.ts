import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startTestServer, type TestServer } from '../support/harness.js';
import { waitFor } from '../delivery/helpers.js';

// The DKIM record is exposed twice: GET /api/domain/dkim and the Domain resource's status.
let server: TestServer;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'mbx-res-'));
  writeFileSync(
    path.join(dir, 'domain.yaml'),
    'apiVersion: mailbox-service.dev/v1alpha1\nkind: Domain\nmetadata: { name: signed-test }\nspec:\n  domain: signed.test\n',
  );
  server = await startTestServer({ env: { MAILBOX_RESOURCES_DIR: dir } });
});
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('DKIM record', () => {
  it('is in the Domain status and identical to what the domain route answers', async () => {
    const statusFile = path.join(server.dataDir, 'status', 'default', 'domain-signed-test.json');
    const status = await waitFor(
      async () => {
        try {
          return JSON.parse(readFileSync(statusFile, 'utf8')).status.dkim;
        } catch {
          return undefined;
        }
      },
      15_000,
      'dkim in status',
    );
    expect(status).toMatchObject({
      name: expect.stringMatching(/^mbx\d{6}\._domainkey\.signed\.test$/),
      type: 'TXT',
      value: expect.stringMatching(/^v=DKIM1; k=rsa; p=/),
    });
    const secret = JSON.parse(
      readFileSync(path.join(server.dataDir, 'secrets', 'default', 'signed-test-domain-token.json'), 'utf8'),
    );
    const route = await server.api(secret.accessToken).get('/api/domain/dkim');
    expect(route.status).toBe(200);
    expect(route.body.data).toEqual({ domain: 'signed.test', ...status });
  });

  it('is refused to a mailbox token (403)', async () => {
    const d = await server.createDomain();
    const m = await server.createMailbox(d.token, `m@${d.name}`);
    expect((await server.api(m.token).get('/api/domain/dkim')).status).toBe(403);
  });
});
