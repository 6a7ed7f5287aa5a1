import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { loadConfig } from '../../src/config/config.js';
import { startRuntime } from '../../src/runtime/runtime.js';
import { silentLogger } from '../../src/core/base/logger.js';
import { upsertDomain } from '../../src/core/state/domains/domain.store.js';
import { insertMailbox } from '../../src/core/state/mailboxes/mailbox.store.js';
import { DEFAULT_INTEGRATION_SCOPES } from '../../src/core/access/scopes.js';

/** The PostgreSQL server the benchmarks create their scratch databases on (database `postgres`). */
export const ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface ScratchDatabase {
  url: string;
  drop(): Promise<void>;
}

/** A new empty database `<prefix>_<random>` on ADMIN_URL's server; `drop` removes it (forcing out connections). */
export async function scratchDatabase(prefix: string): Promise<ScratchDatabase> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  return {
    url: ADMIN_URL.replace(/\/[^/]*$/, `/${name}`),
    async drop() {
      await admin.query(`drop database if exists ${name} with (force)`);
      await admin.end();
    },
  };
}

export interface SeededMailbox {
  address: string;
  mailboxId: string;
  token: string;
}

/**
 * Migrates the database of `env` and declares `domain` with one mailbox per local part, each with
 * a mailbox token of the integration scopes valid for a day, through the core (as the resources do).
 */
export async function seedMailboxes(
  env: Record<string, string>,
  domain: string,
  localParts: string[],
): Promise<SeededMailbox[]> {
  const runtime = await startRuntime(loadConfig(env), { roles: [], log: silentLogger });
  try {
    const s = runtime.services;
    return await s.db.tx(async (trx) => {
      const domainId = await upsertDomain(trx, { name: domain });
      const out: SeededMailbox[] = [];
      for (const local of localParts) {
        const address = `${local}@${domain}`;
        const mailboxId = await insertMailbox(trx, { domainId, address, displayName: local });
        const t = await s.tokenMinter.mint(trx, {
          kind: 'mailbox',
          domainId,
          mailboxId,
          name: 'bench',
          scopes: DEFAULT_INTEGRATION_SCOPES,
          expiresAt: new Date(Date.now() + 86_400_000),
          createdSource: 'bootstrap',
          parentTokenId: null,
        });
        out.push({ address, mailboxId, token: t.accessToken });
      }
      return out;
    });
  } finally {
    await runtime.close();
  }
}
