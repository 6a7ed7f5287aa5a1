import http from 'node:http';
import pg from 'pg';
import { pageQuery, totalOf, type PageRow, type SummaryRow } from '../../src/core/state/messages/message.store.js';
import { toSummary } from '../../src/core/state/messages/message.views.js';
import { offlineCompiler } from '../lib/sql-compiler.js';

// The bare stack, as a competent engineer would write the list with the same parts: node:http + pg
// running the very SQL the list route runs (compiled from the same core function) as a named
// prepared statement (parsed and planned once per connection, as the service's statements are),
// rows mapped by the same view function to the same JSON (items, nextCursor, totalCount). No
// routing, auth, validation, envelope, cursor signing or change marks: the service's list rate
// over this one is what those cost.
// Usage: node bare-pg-server.js <databaseUrl> <mailboxId> <mailboxAddress> <port>
const [databaseUrl, mailboxId, mailboxAddress, port] = process.argv.slice(2) as [string, string, string, string];
const page = pageQuery(mailboxId, undefined, null, 51).compile(offlineCompiler);
const statement = { name: 'bench-list-page', text: page.sql, values: page.parameters as unknown[] };
const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });

http
  .createServer((_req, res) => {
    pool.query<PageRow & SummaryRow>(statement).then(
      (result) => {
        const rows = result.rows.filter((r) => r.id !== null);
        const body = JSON.stringify({
          data: {
            items: rows.slice(0, 50).map((r) => toSummary(r, mailboxAddress)),
            nextCursor: rows.length > 50 ? rows[49]!.id : null,
            totalCount: totalOf(result.rows[0], undefined),
          },
        });
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
