import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { PgliteConnection } from '@mikro-orm/pglite';
import { migrate, openOrm } from '../../src/storage/orm.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const MIGRATIONS = path.join(ROOT, 'src/storage/migrations');

/**
 * A dump of an in-memory PGlite cluster with every migration applied, for the harness's servers
 * to start from: each PGlite server of a test file otherwise runs initdb and all migrations first
 * (about a second and a half of every file on these cores). Made once per machine and kept in the
 * temp directory under a key of the migrations' sources and PGlite's version, so a changed
 * migration makes a new dump; the runtime still runs `migrate` on it, which then finds nothing to do.
 */
let dump: Promise<Blob> | undefined;

export function migratedPgliteDump(): Promise<Blob> {
  return (dump ??= loadOrMake());
}

async function loadOrMake(): Promise<Blob> {
  const file = path.join(tmpdir(), `mbx-pglite-${sourceKey()}.tar`);
  if (existsSync(file)) return new Blob([readFileSync(file)]);
  const orm = await openOrm({});
  try {
    await migrate(orm);
    const pglite = await (orm.em.getConnection() as unknown as PgliteConnection).getNativeClient();
    const made = await pglite.dumpDataDir('none');
    // Written aside and renamed: two workers making it at once each leave a whole file.
    const partial = `${file}.${randomBytes(4).toString('hex')}`;
    writeFileSync(partial, Buffer.from(await made.arrayBuffer()));
    renameSync(partial, file);
    return made;
  } finally {
    await orm.close(true);
  }
}

/** A key of the schema's sources (the migrations, the routines) and PGlite's version. */
export function sourceKey(): string {
  const hash = createHash('sha256');
  const pgliteVersion = JSON.parse(
    readFileSync(path.join(ROOT, 'node_modules/@electric-sql/pglite/package.json'), 'utf8'),
  ) as { version: string };
  hash.update(pgliteVersion.version);
  for (const name of readdirSync(MIGRATIONS).sort())
    hash.update(name).update(readFileSync(path.join(MIGRATIONS, name)));
  hash.update(readFileSync(path.join(ROOT, 'src/storage/entities/routines.ts')));
  return hash.digest('hex').slice(0, 16);
}
