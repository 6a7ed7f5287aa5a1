import http from 'node:http';
import pg from 'pg';
import { pageQuery } from '../../src/core/messages/message.store.js';
import { offlineCompiler } from '../lib/sql-compiler.js';

// The bare stack: node:http + pg running the very SQL the list route runs (compiled
// from the same core function), rows sent as JSON, nothing else: no routing, auth, validation,
// envelope or view mapping. The service's list rate over this one is what the framework costs.
// Usage: node bare-pg-server.js <databaseUrl> <mailboxId> <port>
const [databaseUrl, mailboxId, port] = process.argv.slice(2) as [string, string, string];
const compiler = offlineCompiler;
const page = pageQuery(mailboxId, undefined, null, 51).compile(compiler);
const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });

http
  .createServer((_req, res) => {
    pool.query(page.sql, page.parameters as unknown[]).then(
      (result) => {
        const body = JSON.stringify({ items: result.rows.slice(0, 50), totalCount: result.rows[0]?.inbound_count });
        res.writeHead(200, {
          'content-type': 'application/json; charset=utf-8',
          'content-length': Buffer.byteLength(body),
        });
        res.end(body);
      },
      (err: Error) => {
        res.writeHead(500).end(err.message);
      },
    );
  })
  .listen(Number(port), '127.0.0.1');

// Exit cleanly on SIGTERM, so `node --cpu-prof` (BENCH_PROFILE) writes the profile.
process.on('SIGTERM', () => process.exit(0));
