import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { ConnectionException } from '@mikro-orm/core';
import { isStorageUnavailable } from '../../src/storage/errors.js';
import { AppError } from '../../src/core/base/errors.js';

// Which errors mean "the database is unreachable right now" (503 / 451 4.3.0, the client retries)
// rather than a bug (500). The errors are the ones node-postgres really raises: found by the
// durability suite, where a PostgreSQL killed mid-query surfaced as a 500.

/** A TCP server that accepts and hangs up at once: PostgreSQL dying under an open connection. */
let hangUp: Server;
let hangUpPort = 0;
beforeAll(async () => {
  hangUp = createServer((socket) => socket.once('data', () => socket.destroy()));
  await new Promise<void>((r) => hangUp.listen(0, '127.0.0.1', () => r()));
  hangUpPort = (hangUp.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((r) => hangUp.close(() => r())));

async function errorOf(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

describe('isStorageUnavailable', () => {
  it('recognises a refused connection', async () => {
    // Port 1 on loopback: nothing listens there.
    const err = await errorOf(new pg.Client({ host: '127.0.0.1', port: 1 }).connect());
    expect((err as { code?: string }).code).toBe('ECONNREFUSED');
    expect(isStorageUnavailable(err)).toBe(true);
  });

  it('recognises a connection the server cut (no code, only the message)', async () => {
    const client = new pg.Client({ host: '127.0.0.1', port: hangUpPort });
    client.on('error', () => undefined);
    const err = await errorOf(client.connect());
    expect((err as Error).message).toBe('Connection terminated unexpectedly');
    expect((err as { code?: string }).code).toBeUndefined();
    expect(isStorageUnavailable(err)).toBe(true);
  });

  it('recognises server shutdown and connection SQLSTATEs, also wrapped by the ORM or as a cause', () => {
    const shutdown = Object.assign(
      new pg.DatabaseError('terminating connection due to administrator command', 0, 'error'),
      { code: '57P01' },
    );
    expect(isStorageUnavailable(shutdown)).toBe(true);
    expect(
      isStorageUnavailable(
        Object.assign(new pg.DatabaseError('the database system is starting up', 0, 'error'), { code: '57P03' }),
      ),
    ).toBe(true);
    expect(
      isStorageUnavailable(Object.assign(new pg.DatabaseError('connection failure', 0, 'error'), { code: '08006' })),
    ).toBe(true);
    expect(isStorageUnavailable(new ConnectionException(shutdown))).toBe(true);
    expect(
      isStorageUnavailable(new Error('query failed', { cause: new Error('Connection terminated unexpectedly') })),
    ).toBe(true);
    expect(isStorageUnavailable(new Error('Client has encountered a connection error and is not queryable'))).toBe(
      true,
    );
    // ALTER DATABASE … ALLOW_CONNECTIONS false: new connections get 55000 with this text.
    expect(
      isStorageUnavailable(
        Object.assign(new pg.DatabaseError('database "mbx" is not currently accepting connections', 0, 'error'), {
          code: '55000',
        }),
      ),
    ).toBe(true);
  });

  it('does not excuse errors that are not about reaching the database', () => {
    expect(
      isStorageUnavailable(
        Object.assign(new pg.DatabaseError('duplicate key value violates unique constraint', 0, 'error'), {
          code: '23505',
        }),
      ),
    ).toBe(false);
    expect(
      isStorageUnavailable(Object.assign(new pg.DatabaseError('syntax error', 0, 'error'), { code: '42601' })),
    ).toBe(false);
    expect(isStorageUnavailable(new Error('Connection terminated by a typo in our code, say'))).toBe(false);
    expect(isStorageUnavailable(new AppError('VALIDATION_FAILED'))).toBe(false);
    expect(isStorageUnavailable(undefined)).toBe(false);
    expect(isStorageUnavailable('ECONNREFUSED')).toBe(false);
  });
});
