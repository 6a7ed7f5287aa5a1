import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrate, openOrm } from '../../src/storage/orm.js';
import { sourceKey } from './pglite-dump.js';

/**
 * The name of a PostgreSQL database with every migration applied, for scratch databases to be
 * created from (`create database … template …`, a tenth of a second) instead of each server
 * migrating an empty one (half a second to a second on these cores, for every server of every
 * file). Made once per machine, named by a key of the migrations' sources, so a changed migration
 * makes a new one; the runtime still runs `migrate` on the copy, which then finds nothing to do.
 * Nothing ever connects to it after it is made: PostgreSQL copies a template only while no session
 * is open on it.
 */
let template: Promise<string> | undefined;

export function migratedTemplate(adminUrl: string): Promise<string> {
  return (template ??= make(adminUrl));
}

async function make(adminUrl: string): Promise<string> {
  const name = `mbx_template_${sourceKey()}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const found = await admin.query('select 1 from pg_database where datname = $1', [name]);
    if (found.rowCount) return name;
    // Made under a name of its own and renamed: two workers making it at once each finish theirs,
    // one rename wins and the other copy is dropped.
    const partial = `${name}_${randomBytes(4).toString('hex')}`;
    await admin.query(`create database ${partial}`);
    const orm = await openOrm({ databaseUrl: databaseUrl(adminUrl, partial), poolMax: 1 });
    try {
      await migrate(orm);
    } finally {
      await orm.close(true);
    }
    try {
      await admin.query(`alter database ${partial} rename to ${name}`);
    } catch (err) {
      if ((err as { code?: string }).code !== '42P04') throw err; // duplicate_database: another won
      await admin.query(`drop database ${partial} with (force)`);
    }
    return name;
  } finally {
    await admin.end();
  }
}

export function databaseUrl(adminUrl: string, name: string): string {
  return adminUrl.replace(/\/[^/]*$/, `/${name}`);
}
